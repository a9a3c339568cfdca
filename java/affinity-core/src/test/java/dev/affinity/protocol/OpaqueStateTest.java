package dev.affinity.protocol;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** encoded_opaque_state: text kept as received, bytes kept as bytes until someone needs the text. */
class OpaqueStateTest {
  static final ProtocolCodec CODEC = new ProtocolCodec();

  @Test
  void bytesMadeInProcessAreNeitherEncodedNorDecodedUntilWritten() {
    byte[] state = {0, 1, 2, (byte) 0xff};
    OpaqueState s = OpaqueState.ofBytes(state);
    state[0] = 9; // copied
    assertArrayEquals(new byte[] {0, 1, 2, (byte) 0xff}, s.bytes());
    assertTrue(s.isUnencoded());
    DisaggregatedParams p = DisaggregatedParams.builder(DisaggRequestType.CONTEXT_ONLY).ctxRequestId(5L).opaqueState(s)
        .build();
    assertTrue(p.isAuthProtected());
    assertTrue(p.toBuilder().build().opaqueState().isUnencoded(), "copies of the params keep the bytes");
    assertEquals("{\"request_type\":\"context_only\",\"ctx_request_id\":5,\"encoded_opaque_state\":\"AAEC/w==\"}",
        CODEC.toJsonString(p), "written as base64 when it goes over the wire");
    assertFalse(s.isUnencoded());
    assertEquals("AAEC/w==", p.encodedOpaqueState());
  }

  @Test
  void textFromTheWireIsKeptVerbatimAndEqualsTheSameBytes() {
    DisaggregatedParams p = CODEC.parse("{\"request_type\":\"generation_only\",\"encoded_opaque_state\":\"AAEC\"}"
        .getBytes(StandardCharsets.UTF_8), DisaggregatedParams.class);
    assertEquals("AAEC", p.encodedOpaqueState());
    assertArrayEquals(new byte[] {0, 1, 2}, p.opaqueState().bytes());
    assertEquals(OpaqueState.ofBytes(new byte[] {0, 1, 2}), p.opaqueState());
    assertEquals(OpaqueState.ofBytes(new byte[] {0, 1, 2}).hashCode(), p.opaqueState().hashCode());
    assertThrows(IllegalArgumentException.class, () -> OpaqueState.ofText("not base64!").bytes());
    assertEquals("not base64!", OpaqueState.ofText("not base64!").text(), "signatures see the text as received");
  }

  @Test
  void aStateThatIsNotAStringIsRefusedNamingTheField() {
    ProtocolException e = assertThrows(ProtocolException.class, () -> CODEC.parseCompletionRequest(
        "{\"model\":\"m\",\"prompt\":\"p\",\"disaggregated_params\":{\"request_type\":\"generation_only\",\"encoded_opaque_state\":7}}"
            .getBytes(StandardCharsets.UTF_8)));
    assertEquals("disaggregated_params.encoded_opaque_state", e.field());
    assertTrue(e.getMessage().contains("expected a string"), e.getMessage());
  }
}
