// The smallest LangGraph agent worth serving: one node that sends the thread's messages to the
// benchmark's fake model (an OpenAI-compatible Responses endpoint) and appends its reply.
// bench/peers/langgraph.ts copies this file into a project beside the pinned packages.
import { ChatOpenAI } from '@langchain/openai';
import { MessagesAnnotation, StateGraph } from '@langchain/langgraph';

const model = new ChatOpenAI({
  model: 'fake-model',
  apiKey: 'bench',
  configuration: { baseURL: process.env.BENCH_FAKE_MODEL_URL },
  useResponsesApi: true,
  streaming: true,
  maxRetries: 0,
});

async function answer(state) {
  return { messages: [await model.invoke(state.messages)] };
}

export const graph = new StateGraph(MessagesAnnotation).addNode('agent', answer).addEdge('__start__', 'agent').compile();
