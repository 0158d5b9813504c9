/** Cairn's CDK constructs. */
export { Cairn } from "./cairn.ts";
export { CairnStack, StackOutput, type CairnStackProps } from "./cairn-stack.ts";
export type { CairnEventDeliveryProps, CairnLogLevel, CairnProps } from "./props.ts";
export { CairnDeploymentError, CairnPropsError, TopologyError } from "./errors.ts";
