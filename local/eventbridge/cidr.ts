/**
 * `cidr` matching for IPv4 and IPv6 (AWS docs, "IP address matching"). Addresses are compared as
 * big integers so one code path serves both families; an event value that is not an address of
 * the rule's family simply does not match.
 */
interface ParsedIp {
  readonly version: 4 | 6;
  readonly value: bigint;
}

export function compileCidr(text: string, fail: (reason: string) => never): (value: string) => boolean {
  const slash = text.indexOf("/");
  if (slash < 0 || slash !== text.lastIndexOf("/")) fail(`Malformed CIDR "${text}": one '/' is required`);
  const address = parseIp(text.slice(0, slash));
  if (!address) fail(`Malformed CIDR "${text}": "${text.slice(0, slash)}" is not an IP address`);
  const bitsText = text.slice(slash + 1);
  const totalBits = address.version === 4 ? 32 : 128;
  const prefixBits = /^\d{1,3}$/.test(bitsText) ? Number(bitsText) : NaN;
  if (!(prefixBits >= 0 && prefixBits <= totalBits)) {
    fail(`Malformed CIDR "${text}": prefix length must be between 0 and ${totalBits}`);
  }
  const shift = BigInt(totalBits - prefixBits);
  const network = address.value >> shift;
  return (value) => {
    const ip = parseIp(value);
    return ip !== undefined && ip.version === address.version && ip.value >> shift === network;
  };
}

export function parseIp(text: string): ParsedIp | undefined {
  if (text.includes(":")) {
    const value = parseIpv6(text);
    return value === undefined ? undefined : { version: 6, value };
  }
  const value = parseIpv4(text);
  return value === undefined ? undefined : { version: 4, value: BigInt(value) };
}

function parseIpv4(text: string): number | undefined {
  const parts = text.split(".");
  if (parts.length !== 4) return undefined;
  let value = 0;
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part)) return undefined;
    const octet = Number(part);
    if (octet > 255) return undefined;
    value = value * 256 + octet;
  }
  return value;
}

function parseIpv6(text: string): bigint | undefined {
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const head = halves[0] ? halves[0].split(":") : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(":") : [];
  const groups: number[] = [];
  const all = [...head, ...tail];
  // An embedded IPv4 tail (::ffff:10.0.0.1) counts as two groups.
  const last = all[all.length - 1];
  let ipv4Tail: number | undefined;
  if (last !== undefined && last.includes(".")) {
    ipv4Tail = parseIpv4(last);
    if (ipv4Tail === undefined) return undefined;
    if (tail.length > 0) tail.pop();
    else head.pop();
  }
  const toGroups = (parts: string[]): number[] | undefined => {
    const out: number[] = [];
    for (const part of parts) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(part)) return undefined;
      out.push(parseInt(part, 16));
    }
    return out;
  };
  const headGroups = toGroups(head);
  const tailGroups = toGroups(tail);
  if (!headGroups || !tailGroups) return undefined;
  if (ipv4Tail !== undefined) tailGroups.push(Math.floor(ipv4Tail / 65536), ipv4Tail % 65536);
  const explicit = headGroups.length + tailGroups.length;
  if (halves.length === 2) {
    if (explicit > 7) return undefined;
    groups.push(...headGroups, ...new Array<number>(8 - explicit).fill(0), ...tailGroups);
  } else {
    if (explicit !== 8) return undefined;
    groups.push(...headGroups, ...tailGroups);
  }
  let value = 0n;
  for (const group of groups) value = (value << 16n) | BigInt(group);
  return value;
}
