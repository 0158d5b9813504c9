/** Cairn's CDK constructs. */
export { Cairn } from "./cairn.ts";
export { CairnStack, StackOutput, type CairnStackProps } from "./cairn-stack.ts";
export type { CairnEventDeliveryProps, CairnFargateProps, CairnLogLevel, CairnProps } from "./props.ts";
export { CairnFargate } from "./fargate.ts";
export { CairnDeploymentError, CairnPropsError, TopologyError } from "./errors.ts";
