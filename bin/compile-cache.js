// Where bin/agentd.js and bin/agentd-sandbox keep Node's compile cache (V8's code for the modules
// they load, checked against each module's source, so a rebuilt dist/ is compiled afresh): the
// user's own cache directory, $XDG_CACHE_HOME/agentd/compile-cache or ~/.cache/agentd/compile-cache,
// never a shared /tmp that another user could fill first. NODE_COMPILE_CACHE, when set, wins;
// NODE_DISABLE_COMPILE_CACHE=1 turns it off. A directory that cannot be made only costs the cache.
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';

export function compileCacheDirectory() {
  if (process.env.NODE_COMPILE_CACHE) return process.env.NODE_COMPILE_CACHE;
  const cacheHome = process.env.XDG_CACHE_HOME;
  return join(cacheHome && isAbsolute(cacheHome) ? cacheHome : join(homedir(), '.cache'), 'agentd', 'compile-cache');
}
