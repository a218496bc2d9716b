/**
 * Where the sandbox mounts the tenant's workspace and the agent's home, whatever their host paths.
 * Apart from the protocol's schemas, so that the server's start-up reads them without TypeBox.
 */
export const GUEST_WORKSPACE = '/workspace';
export const GUEST_HOME = '/home/agent';
