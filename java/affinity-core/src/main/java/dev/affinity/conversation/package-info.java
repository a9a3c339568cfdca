/**
 * Conversation and sub-agent resolution (TensorRT-LLM's {@code tensorrt_llm/serve/conversation_id.py} and PR #18684): the request's own
 * conversation id, the server-private sub-agent affinity id, and the routing key each fleet uses.
 * The rules are tabulated in docs/conversation-routing.md.
 */
package dev.affinity.conversation;

