/**
 * The contract between a frontend and what serves its requests: {@link dev.affinity.frontend.CompletionHandler}
 * takes an admitted request, {@link dev.affinity.frontend.ClientSink} receives the answer (whole, streamed or
 * an error), and {@link dev.affinity.frontend.RouteInfo} says where it ran. The HTTP frontend, the fleet
 * simulator and embedding services implement the sink; the disaggregated orchestration implements the handler.
 */
package dev.affinity.frontend;
