package dev.affinity.executor;

import java.util.Arrays;
import java.util.Objects;

/**
 * What a context-only request hands to its generation-only continuation: the context request id,
 * the first generated token(s), the opaque transfer state and the attention-DP rank that holds the
 * KV cache. Arrays are defensively copied.
 */
public record ContextPhaseParams(long ctxRequestId, int ctxDpRank, int[] firstGenTokens, byte[] opaqueState) {

  public ContextPhaseParams {
    firstGenTokens = firstGenTokens == null ? new int[0] : firstGenTokens.clone();
    opaqueState = opaqueState == null ? new byte[0] : opaqueState.clone();
  }

  @Override
  public int[] firstGenTokens() {
    return firstGenTokens.clone();
  }

  @Override
  public byte[] opaqueState() {
    return opaqueState.clone();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ContextPhaseParams p
        && p.ctxRequestId == ctxRequestId
        && p.ctxDpRank == ctxDpRank
        && Arrays.equals(p.firstGenTokens, firstGenTokens)
        && Arrays.equals(p.opaqueState, opaqueState);
  }

  @Override
  public int hashCode() {
    return Objects.hash(ctxRequestId, ctxDpRank, Arrays.hashCode(firstGenTokens), Arrays.hashCode(opaqueState));
  }

  @Override
  public String toString() {
    return "ContextPhaseParams[ctxRequestId=" + ctxRequestId + ", ctxDpRank=" + ctxDpRank
        + ", firstGenTokens=" + Arrays.toString(firstGenTokens) + ", opaqueState=" + opaqueState.length + " bytes]";
  }
}
