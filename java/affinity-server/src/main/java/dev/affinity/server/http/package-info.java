/**
 * The OpenAI-compatible HTTP frontend: {@link dev.affinity.server.http.FrontendServer} (Netty) serves
 * {@code /v1/completions}, {@code /v1/chat/completions} and the informational endpoints, checks every
 * request before it reaches the {@link dev.affinity.frontend.CompletionHandler}, and answers through a
 * {@link dev.affinity.frontend.ClientSink} bound to the connection. See docs/frontend.md.
 */
package dev.affinity.server.http;
