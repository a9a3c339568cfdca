package dev.affinity.executor;

/** Request phase, as TensorRT-LLM's {@code RequestType}; the code is the native facade's value. */
public enum RequestType {
  CONTEXT_AND_GENERATION(0),
  CONTEXT_ONLY(1),
  GENERATION_ONLY(2);

  private final int code;

  RequestType(int code) {
    this.code = code;
  }

  public int code() {
    return code;
  }
}
