package dev.affinity.bench.metrics;

/**
 * One client request as a driver saw it (simulated or live); times in microseconds from the start of
 * the run, -1 where not reached or not known.
 *
 * @param index             order of sending, from 0
 * @param agentId           the main agent's session id (a sub-agent's parent; a trace request's own session)
 * @param sendUs            when the request was sent
 * @param ttftUs            time to the first streamed token
 * @param e2eUs             time to the end of the response
 * @param outputTokens      tokens received
 * @param promptTokens      prompt tokens
 * @param reusedTokens      prompt tokens served from the context instance's KV cache
 * @param idealReusedTokens prompt tokens an infinite cache shared by all instances would have served
 * @param pooledReusedTokens prompt tokens one LRU cache of the fleet's context KV capacity would have
 *                          served (the pooled bound), -1 when unknown
 * @param status            200, or the HTTP status of the error
 * @param error             the error message, null on success
 */
public record RequestRecord(long index, String sessionId, String parentSessionId, String agentId, long sendUs, long ttftUs,
    long e2eUs, int outputTokens, int promptTokens, int reusedTokens, int idealReusedTokens, int pooledReusedTokens, String ctxWorker, int ctxRank,
    String genWorker, int genRank, int status, String error) {

  public boolean ok() {
    return status == 200 && error == null;
  }

  /** Mean time between output tokens after the first, or -1 with fewer than two tokens. */
  public double itlUs() {
    return outputTokens < 2 || ttftUs < 0 || e2eUs < ttftUs ? -1 : (double) (e2eUs - ttftUs) / (outputTokens - 1);
  }

  /** Output tokens per second after the first token (the SLO's output speed), or -1 when unknown. */
  public double outputSpeed() {
    double itl = itlUs();
    return itl <= 0 ? -1 : 1e6 / itl;
  }
}
