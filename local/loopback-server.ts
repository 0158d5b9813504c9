/** An HTTP server of the embedded runtime listening on loopback only, and how to close it. */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface LoopbackServer {
  readonly endpoint: string;
  close(): Promise<void>;
}

/** Listens on 127.0.0.1 (`port`, or a free one); closing drops open connections at once. */
export async function listenOnLoopback(server: Server, port = 0): Promise<LoopbackServer> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
