/**
 * A chat page on agentd with the Vercel AI SDK's `useChat` and `agentdChatTransport`
 * (agentd/client/ai-sdk): the answer, the reasoning and each tool call stream in; a tool that needs
 * approval shows Allow / Deny, answered with the SDK's own addToolApprovalResponse; a reload
 * resumes a running turn (`resume`). Build it with `node examples/ai-sdk-chat/build.mjs` and serve
 * the folder; start agentd with `--cors-origin` set to the page's origin.
 */
import { useState } from 'react';
import { createRoot } from 'react-dom/client';
import { useChat } from '@ai-sdk/react';
import { lastAssistantMessageIsCompleteWithApprovalResponses, type UIMessage } from 'ai';
import { agentdChatTransport } from 'agentd/client/ai-sdk';

const params = new URLSearchParams(location.search);
const transport = agentdChatTransport({
  baseUrl: params.get('agentd') ?? 'http://127.0.0.1:4096',
  ...(params.get('session') ? { sessionId: params.get('session')! } : {}),
});

function Part({ part, answer }: { part: UIMessage['parts'][number]; answer: (id: string, approved: boolean) => void }) {
  switch (part.type) {
    case 'text':
      return <p>{part.text}</p>;
    case 'reasoning':
      return <p className="reasoning">{part.text}</p>;
    case 'dynamic-tool':
      return (
        <div className="tool">
          <code>
            {part.toolName} {JSON.stringify(part.input)}
          </code>
          {part.state === 'approval-requested' && (
            <span>
              <button onClick={() => answer(part.approval.id, true)}>Allow</button>
              <button onClick={() => answer(part.approval.id, false)}>Deny</button>
            </span>
          )}
          {part.state === 'output-available' && <pre>{String(part.output)}</pre>}
          {part.state === 'output-denied' && <em>denied</em>}
        </div>
      );
    default:
      return null;
  }
}

function App() {
  const { messages, sendMessage, addToolApprovalResponse, status, error } = useChat({
    transport,
    resume: true,
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  const [input, setInput] = useState('');
  const answer = (id: string, approved: boolean) => void addToolApprovalResponse({ id, approved });
  return (
    <main>
      {messages.map((message) => (
        <section key={message.id} className={message.role}>
          {message.parts.map((part, index) => (
            <Part key={index} part={part} answer={answer} />
          ))}
        </section>
      ))}
      {error && <p className="error">{error.message}</p>}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (input.trim() === '') return;
          void sendMessage({ text: input });
          setInput('');
        }}
      >
        <input value={input} onChange={(event) => setInput(event.target.value)} disabled={status !== 'ready'} placeholder="Ask agentd" />
      </form>
    </main>
  );
}

createRoot(document.getElementById('root')!).render(<App />);
