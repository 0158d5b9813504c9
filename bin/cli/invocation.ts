/** What the command line asks for: the typed result of parsing argv (args.ts). */
import type { QueueFargateChanges } from "../../functions/core/queue-settings.ts";
import type { SessionStatus } from "../../functions/core/status.ts";

export type OutputFormat = "text" | "json" | "yaml";

/** Where Cairn is: the local runtime file, or a stack and/or endpoint. */
export interface TargetOptions {
  /** Set only when --runtime-file was given. */
  readonly runtimeFile?: string;
  readonly stack?: string;
  readonly endpoint?: string;
  readonly region?: string;
}

interface Common {
  readonly target: TargetOptions;
  readonly output: OutputFormat;
}

/** `retry-config set` flags, as given (validated with the stored configuration they change). */
export interface RetryConfigChanges {
  readonly enabled?: boolean;
  readonly globalMaxRetries?: number;
  readonly defaultPolicyName?: string;
  readonly initialDelay?: string;
  readonly maxDelay?: string;
  readonly multiplier?: number;
}

/** `cairn agent`'s flags; absent ones take the host's defaults (commands/agent.ts). */
export interface AgentOptions {
  readonly id?: string;
  readonly cpu?: number;
  readonly memoryMiB?: number;
  readonly labels: Readonly<Record<string, string>>;
  readonly workRoot?: string;
  readonly heartbeatMs?: number;
  readonly drainGraceMs?: number;
  /** Run kernels as this user (name or uid); the agent must be root. */
  readonly kernelUser?: string;
  /** Read the agent's credentials (JSON) from this descriptor, then close it. */
  readonly credentialsFd?: number;
}

export type Invocation =
  /** `--help`, `-h` or `cairn help [COMMAND]`: the help to print. */
  | { readonly kind: "help"; readonly text: string }
  | (Common & {
      readonly kind: "submit";
      /** A path, or `-` for stdin. */
      readonly file: string;
      readonly sessionId?: string;
      readonly wait: boolean;
      readonly timeoutSeconds?: number;
      readonly streamLogs: boolean;
    })
  | (Common & { readonly kind: "get"; readonly sessionId: string })
  | (Common & { readonly kind: "history"; readonly sessionId: string })
  | (Common & ListInvocation)
  | (Common & {
      readonly kind: "cancel";
      readonly sessionId: string;
      readonly reason?: string;
      /** Force Cancel: the run's end is not waited for. */
      readonly force: boolean;
    })
  | (Common & { readonly kind: "job get" | "tasks"; readonly jobId: string })
  /** Drafts (HPC Pack's Configuring). `file`: a path, or `-` for stdin. */
  | (Common & { readonly kind: "job create"; readonly file: string; readonly jobId?: string })
  | (Common & { readonly kind: "job edit"; readonly jobId: string; readonly file: string })
  | (Common & {
      readonly kind: "job submit";
      readonly jobId: string;
      readonly wait: boolean;
      readonly timeoutSeconds?: number;
      readonly streamLogs: boolean;
    })
  | (Common & { readonly kind: "job delete"; readonly jobId: string })
  | (Common & { readonly kind: "task"; readonly jobId: string; readonly index: number })
  | (Common & {
      readonly kind: "logs";
      readonly jobId: string;
      /** Undefined: every task. */
      readonly task?: number;
      readonly follow: boolean;
    })
  | (Common & {
      readonly kind: "retry-policy create" | "retry-policy update";
      /** A path, or `-` for stdin. */
      readonly file: string;
    })
  | (Common & {
      readonly kind: "template create" | "template update";
      /** A path, or `-` for stdin. */
      readonly file: string;
    })
  | (Common & { readonly kind: "template get" | "template delete"; readonly name: string })
  | (Common & { readonly kind: "template list" })
  | (Common & {
      readonly kind: "failure-category create" | "failure-category update";
      /** A path, or `-` for stdin. */
      readonly file: string;
    })
  | (Common & { readonly kind: "failure-category get" | "failure-category delete"; readonly name: string })
  | (Common & { readonly kind: "failure-category list" })
  | (Common & {
      readonly kind: "retry-policy get" | "retry-policy delete" | "queue get" | "queue delete";
      readonly name: string;
    })
  | (Common & { readonly kind: "retry-policy list" | "queue list" | "retry-config get" })
  | (Common & {
      readonly kind: "queue create" | "queue update";
      readonly name: string;
      readonly priority?: number;
      readonly retryPolicies?: readonly string[];
      /** `--capacity-provider`, `--vcpu-quota`; `null`: `--no-fargate` (remove the settings). */
      readonly fargate?: QueueFargateChanges | null;
    })
  | (Common & { readonly kind: "retry-config set"; readonly changes: RetryConfigChanges })
  | (Common & { readonly kind: "agent"; readonly agent: AgentOptions })
  | (Common & {
      readonly kind: "deployment create";
      /** A path, or `-` for stdin. */
      readonly file: string;
      readonly wait: boolean;
      readonly timeoutSeconds?: number;
    })
  | (Common & {
      readonly kind: "deployment scale";
      readonly name: string;
      readonly replicas: number;
      readonly wait: boolean;
      readonly timeoutSeconds?: number;
    })
  | (Common & {
      readonly kind: "deployment destroy";
      readonly name: string;
      readonly reason?: string;
      readonly wait: boolean;
      readonly timeoutSeconds?: number;
    })
  | (Common & { readonly kind: "deployment get"; readonly name: string })
  | (Common & { readonly kind: "deployment routes"; readonly name: string; readonly all: boolean })
  | (Common & { readonly kind: "deployment list" })
  /** `cairn dashboard`: serves until stopped; port 0 picks a free one. */
  | (Common & { readonly kind: "dashboard"; readonly port: number });

/** The vocabularies a session's state is shown in: Sokovan's statuses, Iris's job states, HPC Pack's. */
export const VOCABULARIES = ["sokovan", "iris", "hpc"] as const;
export type Vocabulary = (typeof VOCABULARIES)[number];

/** `cairn list`: the dashboard's filters, an age window, and --watch. */
export interface ListInvocation {
  readonly kind: "list";
  readonly status?: SessionStatus;
  readonly limit: number;
  /** Sessions whose name or id starts with this. */
  readonly namePrefix?: string;
  readonly queue?: string;
  readonly jobId?: string;
  /** Created at most this long ago. */
  readonly sinceMs?: number;
  /** Created at least this long ago. */
  readonly olderThanMs?: number;
  readonly watch: boolean;
  readonly view: Vocabulary;
}
