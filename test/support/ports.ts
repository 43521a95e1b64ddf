/** Ports for tests and benches that start servers of their own (runners, parents). */
import { once } from "node:events"
import * as net from "node:net"

/** A loopback port free right now (the kernel's pick; released before the caller binds it). */
export const freePort = async (): Promise<number> => {
  const server = net.createServer()
  server.listen(0, "127.0.0.1")
  await once(server, "listening")
  const port = (server.address() as net.AddressInfo).port
  server.close()
  await once(server, "close")
  return port
}
