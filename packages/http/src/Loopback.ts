/**
 * Which host names mean this machine's loopback interface only: the one test a server uses before
 * binding without a secret, and a client before talking to a keyless local service.
 *
 * @since 0.1.0
 */

/**
 * Whether `host` (a bind address or a URL's hostname, brackets allowed around IPv6) names the
 * loopback interface only: `localhost`, `127.0.0.0/8` in dotted-quad form, or `::1`.
 * A name that merely starts with `127.` (`127.example.com`) is not loopback.
 *
 * @category predicates
 * @since 0.1.0
 */
export const isLoopbackHost = (host: string): boolean => {
  const h = host.trim().toLowerCase().replace(/^\[(.*)\]$/, "$1")
  if (h === "localhost" || h === "::1" || h === "0:0:0:0:0:0:0:1") return true
  const octets = h.split(".")
  return octets.length === 4 && octets[0] === "127" &&
    octets.every((o) => /^(0|[1-9][0-9]{0,2})$/.test(o) && Number(o) <= 255)
}
