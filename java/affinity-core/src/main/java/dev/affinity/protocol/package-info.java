/**
 * OpenAI-compatible wire types of the Affinity frontend, as trtllm-serve accepts and returns them.
 *
 * <p>Requests ({@link dev.affinity.protocol.CompletionRequest}, {@link
 * dev.affinity.protocol.ChatCompletionRequest}) and responses are immutable records. Every record that
 * models an open JSON object keeps the fields it does not model in an {@code extra} map, so that
 * re-serializing a parsed object for a worker or a client never drops a field. {@link
 * dev.affinity.protocol.ProtocolCodec} is the only place that reads and writes JSON; it turns every
 * failure into a {@link dev.affinity.protocol.ProtocolException} naming the offending field.
 *
 * <p>{@link dev.affinity.protocol.ConversationParams#subagentAffinityId()} is server-private: it is never
 * read from a body and never written to one. See {@code docs/protocol.md}.
 */
package dev.affinity.protocol;
