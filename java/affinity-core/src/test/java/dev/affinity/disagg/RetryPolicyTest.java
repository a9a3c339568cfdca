package dev.affinity.disagg;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import dev.affinity.routing.Fleet;
import dev.affinity.routing.Selection;
import dev.affinity.worker.WorkerFailure;
import dev.affinity.worker.WorkerFailure.Kind;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The retry and resume policy as a pure decider: each failure, written as plain values, and what follows it. */
class RetryPolicyTest {
  private static final Selection SEL = ScheduleDecisionsTest.selection("gen0", 10, 0);

  @Test
  void beforeTheFirstByteARetryableFailureIsRetriedWhileRetriesAreLeft() {
    for (Kind kind : new Kind[] {Kind.CONNECT, Kind.RESET, Kind.SERVER_ERROR, Kind.INCOMPLETE_ANSWER, Kind.TIMEOUT}) {
      assertEquals(new Step.Retry(null), RetryPolicy.decide(failure(kind, 500, false, 0, false, false)), kind.name());
    }
    assertEquals(new Step.Fail(502, "generation worker gen0: boom (after 2 retries)"),
        RetryPolicy.decide(failure(Kind.CONNECT, 0, false, 2, false, false)));
    assertEquals(new Step.Fail(504, "generation worker gen0: boom (after 2 retries)"),
        RetryPolicy.decide(failure(Kind.TIMEOUT, 0, false, 2, false, false)));
  }

  @Test
  void aClientErrorIsNeverRetriedAndKeepsItsStatus() {
    assertEquals(new Step.Fail(422, "generation worker gen0: boom"),
        RetryPolicy.decide(failure(Kind.CLIENT_ERROR, 422, false, 0, false, false)));
    assertEquals(400, RetryPolicy.status(new WorkerFailure(Kind.CLIENT_ERROR, 200, "odd", false)));
    assertEquals(499, RetryPolicy.status(new WorkerFailure(Kind.CANCELLED, 0, "gone", false)));
  }

  @Test
  void aCutStreamIsResumedFinishedOrEnded() {
    assertEquals(new Step.EndCutStream(null), RetryPolicy.decide(failure(Kind.RESET, 0, true, 0, false, false)),
        "a request that is not streamed cannot be continued");
    assertEquals(new Step.EndCutStream(null), RetryPolicy.decide(failure(Kind.RESET, 0, true, 2, true, false)),
        "no retries left");
    FailureView cut = failure(Kind.RESET, 0, true, 0, true, false);
    assertSame(Step.PLAN_RESUME, RetryPolicy.decide(cut));
    StreamResume.Plan finished = new StreamResume.Plan(StreamResume.Kind.FINISHED, null, null, 0, null, null);
    assertSame(Step.END_STREAM, RetryPolicy.decide(cut.planned(finished)));
    StreamResume.Plan cont = new StreamResume.Plan(StreamResume.Kind.CONTINUE, null, new int[] {1, 2}, 1, null, null);
    assertEquals(new Step.Retry(cont), RetryPolicy.decide(cut.planned(cont)));
    StreamResume.Plan text = new StreamResume.Plan(StreamResume.Kind.NEEDS_TOKENS, null, null, 0, "Hello", null);
    assertEquals(new Step.Tokenize("Hello"), RetryPolicy.decide(cut.planned(text)));
    assertSame(Step.WAIT, RetryPolicy.decide(cut.planned(text).awaitingTokens()), "a worker is tokenizing");
    assertEquals(new Step.EndCutStream("echo"), RetryPolicy.decide(cut.planned(StreamResume.Plan.impossible("echo"))));
    FailureView started = failure(Kind.RESET, 0, false, 0, true, true);
    assertSame(Step.PLAN_RESUME, RetryPolicy.decide(started), "a stream that started counts as cut");
  }

  @Test
  void theBackOffOnTheOnlyLiveWorkerDoublesUpToATenthOfTheLegsShare() {
    assertEquals(Duration.ofMillis(100), RetryPolicy.backoff(1, Duration.ofSeconds(60)));
    assertEquals(Duration.ofMillis(200), RetryPolicy.backoff(2, Duration.ofSeconds(60)));
    assertEquals(Duration.ofMillis(800), RetryPolicy.backoff(4, Duration.ofSeconds(60)));
    assertEquals(Duration.ofSeconds(6), RetryPolicy.backoff(30, Duration.ofSeconds(60)), "a tenth of the share");
    assertEquals(Duration.ofMillis(50), RetryPolicy.backoff(1, Duration.ofMillis(500)));
  }

  private static FailureView failure(Kind kind, int status, boolean afterFirstByte, int retries, boolean streamed,
      boolean streamStarted) {
    return new FailureView(Fleet.GENERATION, SEL, new WorkerFailure(kind, status, "boom", afterFirstByte), retries, 2,
        streamStarted, streamed, null, false);
  }
}
