package dev.affinity.protocol;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** Helper accessors of the request interface never become wire fields (trtllm-serve forbids unknown fields). */
class RequestWireFieldsTest {
  private final ProtocolCodec codec = new ProtocolCodec();

  @Test
  void serializedRequestsHoldExactlyTheClientsFields() {
    String completion = "{\"model\":\"m\",\"prompt\":\"hi\",\"stream\":true,\"disaggregated_params\":"
        + "{\"request_type\":\"context_only\",\"disagg_request_id\":7}}";
    String chat = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":3}";
    for (String json : new String[] {completion, chat}) {
      byte[] in = json.getBytes(StandardCharsets.UTF_8);
      OpenAiRequest r = json.contains("messages") ? codec.parseChatCompletionRequest(in)
          : codec.parseCompletionRequest(in);
      JsonNode written = codec.readTree(codec.toJsonBytes(r));
      assertEquals(codec.readTree(in), written, "no \"chat\", \"streaming\" or other helper property");
    }
  }
}
