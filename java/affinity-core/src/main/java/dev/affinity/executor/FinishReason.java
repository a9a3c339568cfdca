package dev.affinity.executor;

/** Why a request stopped producing tokens; the code is the native facade's value. */
public enum FinishReason {
  NOT_FINISHED,
  END_ID,
  STOP,
  LENGTH,
  CANCELLED,
  ERROR;

  public int code() {
    return ordinal();
  }

  public static FinishReason fromCode(int code) {
    FinishReason[] all = values();
    if (code < 0 || code >= all.length) {
      throw new IllegalArgumentException("unknown finish reason code " + code);
    }
    return all[code];
  }
}
