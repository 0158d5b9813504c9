/*
 * Starts DynamoDB Local exactly as its own main does, except that its Jetty connector is bound
 * to 127.0.0.1 before it opens its socket: DynamoDB Local has no bind option and otherwise
 * listens on every interface with no authentication, and the table decides what agents run.
 *
 * It also exits when its standard input closes, i.e. when the process that started it is gone,
 * even by SIGKILL: a DynamoDB Local left behind would hold its port and its database files.
 *
 * Run with the jar on the class path: java -cp DynamoDBLocal.jar LoopbackDynamoDbLocal.java ARGS
 */
import java.lang.reflect.Field;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import software.amazon.dynamodb.services.local.main.ServerRunner;
import software.amazon.dynamodb.services.local.server.DynamoDBProxyServer;

public class LoopbackDynamoDbLocal {
  public static void main(String[] args) throws Exception {
    DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
    Field field = DynamoDBProxyServer.class.getDeclaredField("server");
    field.setAccessible(true);
    Server server = (Server) field.get(proxy);
    Connector[] connectors = server.getConnectors();
    if (connectors.length == 0) fail("DynamoDB Local has no connector to bind");
    for (Connector connector : connectors) {
      if (!(connector instanceof ServerConnector)) fail("unexpected connector " + connector);
      ((ServerConnector) connector).setHost("127.0.0.1");
    }
    proxy.start();
    for (Connector connector : connectors) {
      ServerConnector c = (ServerConnector) connector;
      // Refuse to serve unless the bind really is loopback-only.
      if (!"127.0.0.1".equals(c.getHost())) fail("DynamoDB Local bound to " + c.getHost());
      System.out.println("DynamoDB Local listening on 127.0.0.1:" + c.getLocalPort());
    }
    Thread watchdog = new Thread(() -> {
      try {
        while (System.in.read() != -1) {
          // Input is ignored; only its end matters.
        }
      } catch (Exception ignored) {
        // A broken pipe is an end too.
      }
      try {
        proxy.stop(); // Closes the database cleanly when it is on disk.
      } catch (Exception ignored) {
        // Exiting matters more.
      }
      Runtime.getRuntime().halt(0);
    });
    watchdog.setDaemon(true);
    watchdog.start();
    proxy.join();
  }

  private static void fail(String message) {
    System.err.println("cairn: " + message);
    Runtime.getRuntime().halt(1);
  }
}
