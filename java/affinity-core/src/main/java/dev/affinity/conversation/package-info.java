/**
 * Conversation and sub-agent resolution (reference trtllm-disagg.md §3.2-3.3): the request's own
 * conversation id, the server-private sub-agent affinity id, and the routing key each fleet uses.
 * The rules are tabulated in docs/conversation-routing.md.
 */
package dev.affinity.conversation;

