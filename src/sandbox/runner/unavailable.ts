/** A guarantee the host cannot give; the runner prints it instead of `ready` and exits. */
export class Unavailable extends Error {
  constructor(
    readonly missing: string,
    message: string,
  ) {
    super(message);
  }
}
