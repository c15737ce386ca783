/** A user-facing CLI failure: printed as `kubeloop: <message>`, without a stack trace. */
export class CliError extends Error {
  override readonly name = "CliError";
  readonly exitCode: number;

  constructor(message: string, exitCode = 1) {
    super(message);
    this.exitCode = exitCode;
  }
}
