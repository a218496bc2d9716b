import { UsageError } from '../../config/flags.ts';

export const CHAT_HELP = `Usage: agentd chat [options] [agentd serve options]

A terminal client. With --url it talks to a running server; without, it starts one in this
process for the chat's directory (any \`agentd serve\` option applies; the port is a free one).
The session is made at the first prompt, in the chat's directory.

Options:
  --url URL          a running agentd (token from SERVICE_TOKEN or --token-file)
  --token-file PATH  bearer token file (owner-only)
  --cwd DIR          the session's directory (default: this one); must lie in the server's
                     workspace roots (started here: the workspace root, unless --workspace-root)
  --session ID       resume this session (or the one whose id starts so) instead of a new one
  --model ID         model of a new session
  --output-schema FILE  a JSON Schema every turn's answer must satisfy (CONTRACT.md §22): the
                     turn's result is printed as one line of JSON (piped: instead of the answer)
  --json             piped: print each event as one JSON object a line on stdout (notices go
                     to stderr)
  --yolo             answer every approval of the run allow_once, unasked (said at start)
  --deny             answer every approval of the run deny, unasked (said at start)
  --help             show this help

In the chat: /sessions, /resume [ID or prefix] (a picker on a terminal), /model [ID], /compact,
/clear, /quit. Approvals and questions are answered with one key. Keys typed while a turn runs
are kept and sent as the next prompt. Ctrl-C cancels the running turn; with none running it exits.
NO_COLOR, or an output that is not a terminal, prints plain lines (no colour, no status line).

Piped, each input line is a turn; a request shown is answered by the next line (its key, e.g. 1,
or an option such as allow_once or deny; words it asks for on the line after). Exit status: 0 when
every turn completed, 1 when one failed or was cancelled, 2 for a usage or connection error or a
request left unanswered at the end of the input.`;

export interface ChatOptions {
  url: string | null;
  tokenFile: string | null;
  sessionId: string | null;
  model: string | null;
  cwd: string | null;
  /** --output-schema: the file of a JSON Schema each turn's answer must satisfy */
  outputSchema: string | null;
  /** --json: events as JSON lines */
  json: boolean;
  /** --yolo (allow_once) or --deny */
  autoAnswer: 'allow_once' | 'deny' | null;
  /** everything else: `agentd serve` options for the embedded server */
  serveArgs: string[];
  help: boolean;
}

const OWN_VALUE_FLAGS: Record<string, keyof ChatOptions> = { '--url': 'url', '--session': 'sessionId', '--model': 'model', '--cwd': 'cwd', '--output-schema': 'outputSchema' };

export function parseChatOptions(argv: readonly string[]): ChatOptions {
  const options: ChatOptions = { url: null, tokenFile: null, sessionId: null, model: null, cwd: null, outputSchema: null, json: false, autoAnswer: null, serveArgs: [], help: false };
  for (let index = 0; index < argv.length; index++) {
    const [flag, inline] = splitInline(argv[index]);
    const valueOf = () => {
      const value = inline ?? argv[++index];
      if (value === undefined || value === '') throw new UsageError(`${flag}: needs a value`);
      return value;
    };
    if (flag === '--help' || flag === '-h') options.help = true;
    else if (flag === '--json') options.json = true;
    else if (flag === '--yolo' || flag === '--deny') {
      const answer = flag === '--yolo' ? 'allow_once' : 'deny';
      if (options.autoAnswer !== null && options.autoAnswer !== answer) throw new UsageError('--yolo and --deny: give one of the two');
      options.autoAnswer = answer;
    }
    else if (flag in OWN_VALUE_FLAGS) (options as unknown as Record<string, string>)[OWN_VALUE_FLAGS[flag]] = valueOf();
    else if (flag === '--token-file') {
      options.tokenFile = valueOf();
      options.serveArgs.push('--token-file', options.tokenFile);
    } else options.serveArgs.push(argv[index]);
  }
  if (options.url !== null) {
    let parsed: URL;
    try {
      parsed = new URL(options.url);
    } catch {
      throw new UsageError(`--url: not a URL: ${options.url}`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new UsageError('--url: must be http or https');
    const extra = options.serveArgs.filter((arg) => arg !== '--token-file' && arg !== options.tokenFile);
    if (extra.length > 0) throw new UsageError(`${extra[0]}: server options only apply without --url`);
  }
  return options;
}

function splitInline(arg: string): [string, string | undefined] {
  const equals = arg.indexOf('=');
  return arg.startsWith('--') && equals > 0 ? [arg.slice(0, equals), arg.slice(equals + 1)] : [arg, undefined];
}
