package dev.affinity.disagg;

import dev.affinity.protocol.ChatCompletionStreamResponse;
import dev.affinity.protocol.CompletionStreamResponse;
import dev.affinity.protocol.DisaggRequestType;
import dev.affinity.protocol.DisaggregatedParams;
import dev.affinity.protocol.OpenAiStreamChunk;
import dev.affinity.protocol.Utf8;
import dev.affinity.worker.EncodedChunk;
import dev.affinity.worker.EncodedResponse;
import dev.affinity.worker.WorkerFailure;
import java.nio.charset.StandardCharsets;
import java.util.Optional;

/**
 * What a worker's answer to a leg must carry before the orchestration uses it (docs/workers.md, "What a worker's
 * answer must carry"); an answer that lacks it is the worker's failure ({@link WorkerFailure.Kind#INCOMPLETE_ANSWER},
 * retried like a 5xx), never the client's success.
 *
 * <ul>
 *   <li>a context-only answer: {@code choices[0]} with {@code disaggregated_params} and their {@code ctx_request_id}
 *       (what upstream's {@code _verify_ctx_response} checks), unless {@code choices[0]} finished the request in the
 *       context phase (a finish reason other than {@code length} / {@code not_finished}): then it is the answer
 *       itself and is held to the next rule;
 *   <li>a generation-only or full answer: {@code choices[0]} with its output, a chat {@code message} or a
 *       completion's {@code text} (empty text is an answer: a stop on the first token, a length of zero);
 *   <li>a streamed answer: at least one chunk with a choice before {@code [DONE]} (choiceless chunks, such as a usage
 *       chunk, may come too).
 * </ul>
 * Stateless.
 */
final class AnswerContract {
  /** The fault of a streamed leg that ended without a chunk carrying a choice. */
  static final String NO_STREAMED_CHOICE = "streamed no chunk with a choice before data: [DONE]";
  /** The fault of a whole leg that completed without an answer. */
  static final String NO_ANSWER = "completed the leg without an answer";
  private static final byte[] CHOICES = "\"choices\"".getBytes(StandardCharsets.US_ASCII);

  private AnswerContract() {}

  /** The failure a fault is (see the methods below): the worker's, retryable before the client has a byte. */
  static WorkerFailure failure(String fault) {
    return new WorkerFailure(WorkerFailure.Kind.INCOMPLETE_ANSWER, 0, fault, false);
  }

  /** What a whole answer to {@code leg} lacks, as the error says it ("answered without ..."); null when nothing. */
  static String fault(DisaggRequestType leg, EncodedResponse answer) {
    if (leg != DisaggRequestType.CONTEXT_ONLY) {
      return outputFault(answer);
    }
    if (answer.choiceCount() == 0) {
      return "answered without choices[0].disaggregated_params (no choices)";
    }
    if (Schedule.finishedInContext(answer)) {
      return outputFault(answer);
    }
    Optional<DisaggregatedParams> params = answer.firstDisaggregatedParams();
    if (params.isEmpty()) {
      return "answered without choices[0].disaggregated_params";
    }
    if (params.get().ctxRequestId() == null) {
      return "answered without choices[0].disaggregated_params.ctx_request_id";
    }
    return null;
  }

  private static String outputFault(EncodedResponse answer) {
    if (answer.choiceCount() == 0) {
      return "answered without choices[0] (no choices)";
    }
    if (!answer.firstChoiceHasOutput()) {
      return "answered without choices[0]." + (answer.isChat() ? "message" : "text");
    }
    return null;
  }

  /** Whether a streamed chunk carries a choice. */
  static boolean carriesChoice(OpenAiStreamChunk chunk) {
    return chunk instanceof ChatCompletionStreamResponse chat ? !chat.choices().isEmpty()
        : !((CompletionStreamResponse) chunk).choices().isEmpty();
  }

  /**
   * Whether a streamed chunk carries a choice: found in its bytes ({@code "choices"}, then {@code [} and something
   * other than {@code ]}), which holds for every chunk a worker streams before its last ones; else the chunk is
   * parsed to be sure (a chunk that cannot be parsed carries none).
   */
  static boolean carriesChoice(EncodedChunk chunk) {
    OpenAiStreamChunk record = chunk.record();
    if (record != null) {
      return carriesChoice(record);  // an in-process worker's: no bytes to write for the question
    }
    byte[] json = chunk.json();
    for (int at = ByteSearch.indexOf(json, CHOICES, 0); at >= 0;
        at = ByteSearch.indexOf(json, CHOICES, at + CHOICES.length)) {
      int i = Utf8.skipJsonSpace(json, at + CHOICES.length);
      if (i < json.length && json[i] == ':') {
        i = Utf8.skipJsonSpace(json, i + 1);
        if (i < json.length && json[i] == '[') {
          i = Utf8.skipJsonSpace(json, i + 1);
          if (i < json.length && json[i] != ']') {
            return true;
          }
        }
      }
    }
    try {
      return carriesChoice(chunk.parsed());
    } catch (RuntimeException unparsable) {
      return false;
    }
  }
}
