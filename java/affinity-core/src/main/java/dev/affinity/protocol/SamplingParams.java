package dev.affinity.protocol;

/**
 * The sampling knobs completions and chat completions share: {@code temperature}, {@code top_p},
 * {@code top_k}, {@code n}, {@code seed}, {@code stop} and {@code ignore_eos}, as TensorRT-LLM's
 * {@code tensorrt_llm/serve/openai_protocol.py} names them. Both requests carry them at the top level of
 * their bodies (the wire shape), validate them here, read them as one record ({@code sampling()}) and set
 * them through one builder ({@code Builder.sampling}). Every field is optional (null: absent, not written);
 * {@code temperature} and {@code top_p} must be finite ({@link RequestFields}). Not a wire type of its own: Jackson
 * never reads or writes it.
 *
 * <p>The requests keep the seven knobs as flat components because that is their wire shape and Jackson
 * 2.20 cannot read it into a nested record: {@code @JsonUnwrapped} on a record component fails together
 * with the {@code @JsonAnySetter} that keeps unmodelled fields (a ClassCastException in the creator), and
 * through a builder it hands the any-setter empty copies of nested unmodelled values.
 */
public record SamplingParams(Double temperature, Double topP, Integer topK, Integer n, Long seed, StringOrList stop,
    Boolean ignoreEos) {

  /** No knob set: the worker's defaults. */
  public static final SamplingParams NONE = new SamplingParams(null, null, null, null, null, null, null);

  /**
   * @throws ProtocolException naming the field when a value is invalid
   */
  public SamplingParams {
    RequestFields.TEMPERATURE.check(temperature);
    RequestFields.TOP_P.check(topP);
  }

  public static Builder builder() {
    return new Builder(NONE);
  }

  public Builder toBuilder() {
    return new Builder(this);
  }

  /** Mutable builder; {@link #build()} validates. */
  public static final class Builder {
    private Double temperature;
    private Double topP;
    private Integer topK;
    private Integer n;
    private Long seed;
    private StringOrList stop;
    private Boolean ignoreEos;

    private Builder(SamplingParams p) {
      temperature = p.temperature;
      topP = p.topP;
      topK = p.topK;
      n = p.n;
      seed = p.seed;
      stop = p.stop;
      ignoreEos = p.ignoreEos;
    }

    public Builder temperature(Double v) {
      temperature = v;
      return this;
    }

    public Builder topP(Double v) {
      topP = v;
      return this;
    }

    public Builder topK(Integer v) {
      topK = v;
      return this;
    }

    public Builder n(Integer v) {
      n = v;
      return this;
    }

    public Builder seed(Long v) {
      seed = v;
      return this;
    }

    public Builder stop(StringOrList v) {
      stop = v;
      return this;
    }

    public Builder ignoreEos(Boolean v) {
      ignoreEos = v;
      return this;
    }

    public SamplingParams build() {
      return new SamplingParams(temperature, topP, topK, n, seed, stop, ignoreEos);
    }
  }
}
