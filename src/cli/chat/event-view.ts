import type { StreamItem } from '../../client/index.ts';
import type { ChatOutput } from './render.ts';
import type { StatusLine } from './status-line.ts';

/** What the display of an event needs. */
export interface EventView {
  output: ChatOutput;
  status: StatusLine;
  /** piped with --output-schema: the result line is the answer, so the streamed text is not shown */
  resultOnly: boolean;
}

/**
 * Shows the events that only change the screen: the answer and reasoning as they stream, tools,
 * warnings, the status line's state. Returns false for the ones the chat acts on (requests, a
 * turn's end, replay.reset), and for events it does not show.
 */
export function showEvent(item: StreamItem, view: EventView): boolean {
  const { output, status } = view;
  switch (item.type) {
    case 'turn.queued':
      status.setState('queued');
      return true;
    case 'turn.started':
      status.setState('waiting for the model');
      return true;
    case 'turn.result':
      output.line(JSON.stringify(item.data.result));
      return true;
    case 'turn.steered':
      // the model's next request begins a new step: its text starts on a line of its own
      output.endStream();
      return true;
    case 'response.text.delta':
      if (view.resultOnly) return true;
      status.setState('answering');
      status.streamed(item.data.text.length);
      output.answerDelta(item.data.text);
      return true;
    case 'response.reasoning.delta':
      status.setState('thinking');
      status.streamed(item.data.text.length);
      output.reasoningDelta(item.data.text);
      return true;
    case 'tool.updated':
      status.setState(`running ${item.data.name}`);
      output.toolCall(item.data.name, item.data.arguments);
      return true;
    case 'tool.output.updated': {
      const last = item.data.output.trimEnd().split('\n').at(-1)?.trim();
      status.setState(`running ${item.data.name}${last ? `: ${last}` : ''}`);
      return true;
    }
    case 'tool.finished':
      status.setState('waiting for the model');
      output.toolOutput(item.data.output);
      return true;
    case 'warning':
    case 'provider.limit':
      output.notice(`warning: ${item.data.text}`);
      return true;
    case 'response.restarted':
      output.notice(`the model starts its answer again (${item.data.reason})`);
      return true;
    case 'model.context.reset':
      output.notice(`context ${item.data.reason === 'clear' ? 'cleared' : 'compacted'}`);
      return true;
    default:
      return false;
  }
}
