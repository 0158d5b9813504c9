/** Structured JSON logs (one line each), the shape CloudWatch Logs Insights queries well. */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export function jsonLogger(
  service: string,
  write: (line: string) => void = (line) => process.stdout.write(line + "\n"),
  level: "info" | "warn" | "error" = "info",
): Logger {
  const order = { info: 0, warn: 1, error: 2 } as const;
  const emit = (lvl: keyof typeof order, message: string, fields?: Record<string, unknown>) => {
    if (order[lvl] < order[level]) return;
    write(JSON.stringify({ level: lvl, service, message, ...fields, time: new Date().toISOString() }));
  };
  return {
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
  };
}
