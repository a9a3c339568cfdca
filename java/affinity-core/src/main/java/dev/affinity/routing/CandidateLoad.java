package dev.affinity.routing;

/**
 * The work a router has in flight at one candidate: a rank of a worker, or the whole worker ({@code rank} -1) when
 * its ranks are not visible. {@code requests} selections not yet released, carrying {@code tokens} prompt tokens.
 */
public record CandidateLoad(String workerId, int rank, int requests, long tokens) {}
