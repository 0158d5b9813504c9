/*
 * Starts DynamoDB Local exactly as its own main does, except:
 *
 * - its Jetty connector is bound to 127.0.0.1 before it opens its socket: DynamoDB Local has no
 *   bind option and otherwise listens on every interface;
 * - every request must be signed (AWS Signature Version 4) with the one credential given on the
 *   first line of standard input, "ACCESS_KEY_ID SECRET_ACCESS_KEY": DynamoDB Local itself accepts
 *   any credentials, and anyone on the host can reach a loopback port. A request signed otherwise
 *   is refused as DynamoDB refuses it (HTTP 400, UnrecognizedClientException for an unknown key,
 *   InvalidSignatureException for a bad signature) before DynamoDB Local sees it. The credential
 *   is read from standard input, never from the command line or the environment, which other
 *   processes can read (/proc/PID/cmdline, and /proc/PID/environ for the same user). An empty
 *   first line turns the check off: for a database that is only ever a test run's;
 * - it exits when its standard input closes, i.e. when the process that started it is gone,
 *   even by SIGKILL: a DynamoDB Local left behind would hold its port and its database files.
 *
 * Run with the jar on the class path: java -cp DynamoDBLocal.jar LoopbackDynamoDbLocal.java ARGS
 */
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.eclipse.jetty.http.HttpField;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.io.content.ByteBufferContentSource;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.Callback;
import software.amazon.dynamodb.services.local.main.ServerRunner;
import software.amazon.dynamodb.services.local.server.DynamoDBProxyServer;

public class LoopbackDynamoDbLocal {
  public static void main(String[] args) throws Exception {
    String credential = firstLine(System.in);
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
    if (!credential.isEmpty()) {
      String[] parts = credential.split(" ");
      if (parts.length != 2 || parts[0].isEmpty() || parts[1].isEmpty()) {
        fail("the first line of standard input must be \"ACCESS_KEY_ID SECRET_ACCESS_KEY\" or empty");
      }
      server.setHandler(new SignedRequestsOnly(server.getHandler(), parts[0], parts[1]));
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
          // Input after the first line is ignored; only its end matters.
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

  /** One line of `in`, read byte by byte so that nothing after it is consumed. */
  private static String firstLine(InputStream in) throws IOException {
    ByteArrayOutputStream line = new ByteArrayOutputStream();
    for (int b = in.read(); b != '\n'; b = in.read()) {
      if (b == -1) fail("standard input closed before the credential line");
      if (line.size() > 4096) fail("the credential line is too long");
      line.write(b);
    }
    return line.toString(StandardCharsets.UTF_8).trim();
  }

  private static void fail(String message) {
    System.err.println("cairn: " + message);
    Runtime.getRuntime().halt(1);
  }

  /**
   * Passes on only requests signed with SigV4 by the one credential, over the headers the
   * request lists in SignedHeaders (host, x-amz-date and x-amz-target among them) and the body
   * received, dated within 15 minutes of now: the checks DynamoDB's own front door makes.
   */
  static final class SignedRequestsOnly extends Handler.Wrapper {
    private static final String UNKNOWN_KEY = "The security token included in the request is invalid.";
    private static final String MISMATCH =
        "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.";
    /** DynamoDB's limit on a request is well under this (a BatchWriteItem of 25 items of 400 KB). */
    private static final int MAX_BODY_BYTES = 16 * 1024 * 1024;
    private static final Duration MAX_SKEW = Duration.ofMinutes(15);
    private static final DateTimeFormatter AMZ_DATE = DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'");

    private final byte[] accessKeyId;
    private final byte[] signingSecret;

    SignedRequestsOnly(Handler next, String accessKeyId, String secretAccessKey) {
      super(next);
      this.accessKeyId = accessKeyId.getBytes(StandardCharsets.UTF_8);
      this.signingSecret = ("AWS4" + secretAccessKey).getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public boolean handle(Request request, Response response, Callback callback) throws Exception {
      HttpFields headers = request.getHeaders();
      String authorization = headers.get("Authorization");
      if (authorization == null) {
        return refuse(response, callback, "MissingAuthenticationTokenException", "Request is missing Authentication Token");
      }
      Authorization auth = Authorization.parse(authorization);
      if (auth == null || !MessageDigest.isEqual(auth.accessKeyId.getBytes(StandardCharsets.UTF_8), accessKeyId)) {
        return refuse(response, callback, "UnrecognizedClientException", UNKNOWN_KEY);
      }
      if (headers.get("X-Amz-Security-Token") != null) {
        return refuse(response, callback, "UnrecognizedClientException", UNKNOWN_KEY);
      }
      byte[] body;
      try {
        ByteBuffer buffer = Content.Source.asByteBufferAsync(request, MAX_BODY_BYTES).get();
        body = new byte[buffer.remaining()];
        buffer.get(body);
      } catch (ExecutionException e) {
        return refuse(response, callback, "ValidationException", "request body unreadable or over " + MAX_BODY_BYTES + " bytes");
      }
      if (!verifies(request, auth, body)) return refuse(response, callback, "InvalidSignatureException", MISMATCH);
      return super.handle(new WithBody(request, body), response, callback);
    }

    private boolean verifies(Request request, Authorization auth, byte[] body) throws Exception {
      HttpFields headers = request.getHeaders();
      List<String> signed = auth.signedHeaders;
      if (!signed.contains("host") || !signed.contains("x-amz-date")) return false;
      if (headers.get("X-Amz-Target") != null && !signed.contains("x-amz-target")) return false;
      String query = request.getHttpURI().getQuery();
      // DynamoDB's API has no query parameters; none is accepted rather than canonicalized.
      if (query != null && !query.isEmpty()) return false;
      String amzDate = headers.get("X-Amz-Date");
      if (amzDate == null || !amzDate.startsWith(auth.date)) return false;
      Instant signedAt;
      try {
        signedAt = LocalDateTime.parse(amzDate, AMZ_DATE).toInstant(ZoneOffset.UTC);
      } catch (Exception e) {
        return false;
      }
      if (Duration.between(signedAt, Instant.now()).abs().compareTo(MAX_SKEW) > 0) return false;
      String bodyHash = hex(MessageDigest.getInstance("SHA-256").digest(body));
      String claimed = headers.get("X-Amz-Content-Sha256");
      if (claimed != null && !claimed.equals(bodyHash)) return false;

      StringBuilder canonical = new StringBuilder();
      canonical.append(request.getMethod()).append('\n');
      canonical.append(request.getHttpURI().getPath()).append('\n');
      canonical.append('\n');
      for (String name : signed) {
        List<HttpField> fields = headers.getFields(name);
        if (fields.isEmpty()) return false;
        StringBuilder value = new StringBuilder();
        for (HttpField f : fields) {
          if (value.length() > 0) value.append(',');
          value.append(f.getValue().trim().replaceAll("\\s+", " "));
        }
        canonical.append(name).append(':').append(value).append('\n');
      }
      canonical.append('\n').append(String.join(";", signed)).append('\n').append(bodyHash);
      String scope = auth.date + "/" + auth.region + "/" + auth.service + "/aws4_request";
      String toSign = "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n"
          + hex(MessageDigest.getInstance("SHA-256").digest(canonical.toString().getBytes(StandardCharsets.UTF_8)));
      byte[] key = hmac(signingSecret, auth.date);
      key = hmac(key, auth.region);
      key = hmac(key, auth.service);
      key = hmac(key, "aws4_request");
      byte[] expected = hex(hmac(key, toSign)).getBytes(StandardCharsets.UTF_8);
      return MessageDigest.isEqual(expected, auth.signature.getBytes(StandardCharsets.UTF_8));
    }

    /** DynamoDB's error: its JSON body, its status, its x-amzn-ErrorType. */
    private static boolean refuse(Response response, Callback callback, String code, String message) {
      String body = "{\"__type\":\"com.amazon.coral.service#" + code + "\",\"message\":\"" + message + "\"}";
      response.setStatus(400);
      response.getHeaders().put("Content-Type", "application/x-amz-json-1.0");
      response.getHeaders().put("x-amzn-ErrorType", code);
      response.getHeaders().put("x-amzn-RequestId", UUID.randomUUID().toString());
      Content.Sink.write(response, true, body, callback);
      return true;
    }

    private static byte[] hmac(byte[] key, String data) throws Exception {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key, "HmacSHA256"));
      return mac.doFinal(data.getBytes(StandardCharsets.UTF_8));
    }

    private static String hex(byte[] bytes) {
      return HexFormat.of().formatHex(bytes);
    }
  }

  /** The Authorization header's fields; null when it is not a well-formed SigV4 header. */
  record Authorization(String accessKeyId, String date, String region, String service, List<String> signedHeaders, String signature) {
    static Authorization parse(String value) {
      String prefix = "AWS4-HMAC-SHA256 ";
      if (!value.startsWith(prefix)) return null;
      String credential = null;
      String signedHeaders = null;
      String signature = null;
      for (String part : value.substring(prefix.length()).split(",")) {
        String p = part.trim();
        int eq = p.indexOf('=');
        if (eq < 0) return null;
        String name = p.substring(0, eq);
        String v = p.substring(eq + 1);
        if (name.equals("Credential")) credential = v;
        else if (name.equals("SignedHeaders")) signedHeaders = v;
        else if (name.equals("Signature")) signature = v;
      }
      if (credential == null || signedHeaders == null || signature == null) return null;
      String[] scope = credential.split("/", -1);
      if (scope.length != 5 || !scope[4].equals("aws4_request")) return null;
      if (!signature.matches("[0-9a-f]{64}")) return null;
      List<String> names = Arrays.stream(signedHeaders.split(";")).map(String::toLowerCase).toList();
      return new Authorization(scope[0], scope[1], scope[2], scope[3], names, signature);
    }
  }

  /** The request with its body, already read to check the signature, to be read again. */
  static final class WithBody extends Request.Wrapper {
    private final ByteBufferContentSource body;

    WithBody(Request request, byte[] body) {
      super(request);
      this.body = new ByteBufferContentSource(ByteBuffer.wrap(body));
    }

    @Override
    public Content.Chunk read() {
      return body.read();
    }

    @Override
    public void demand(Runnable demandCallback) {
      body.demand(demandCallback);
    }

    @Override
    public void fail(Throwable failure) {
      body.fail(failure);
    }
  }
}
