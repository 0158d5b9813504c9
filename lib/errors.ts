/**
 * Synth-time errors of the Cairn constructs. Each names the prop (or topology entry) at fault
 * and why, so a bad configuration fails `cdk synth` instead of a deployment.
 */
export abstract class CairnDeploymentError extends Error {
  abstract readonly code: string;
}

/** A construct prop is invalid, alone or in combination with another. */
export class CairnPropsError extends CairnDeploymentError {
  override readonly name = "CairnPropsError";
  readonly code = "CAIRN_PROPS";
  readonly prop: string;
  constructor(prop: string, reason: string) {
    super(`${prop}: ${reason}`);
    this.prop = prop;
  }
}

/** functions/topology/index.ts declares something the stack cannot build. */
export class TopologyError extends CairnDeploymentError {
  override readonly name = "TopologyError";
  readonly code = "CAIRN_TOPOLOGY";
  constructor(where: string, reason: string) {
    super(`topology ${where}: ${reason}`);
  }
}
