package dev.affinity.nativebridge.worker;

import com.knuddels.jtokkit.Encodings;
import com.knuddels.jtokkit.api.Encoding;
import com.knuddels.jtokkit.api.EncodingRegistry;
import com.knuddels.jtokkit.api.EncodingType;
import com.knuddels.jtokkit.api.IntArrayList;
import dev.affinity.worker.TokenCodec;
import java.util.Locale;

/** A real BPE tokenizer (jtokkit): cl100k_base by default, also o200k_base, p50k_base, r50k_base. */
public final class BpeTokenCodec implements TokenCodec {
  private static final EncodingRegistry REGISTRY = Encodings.newLazyEncodingRegistry();
  private final Encoding encoding;
  private final String name;
  private volatile int maxCharsPerToken;

  public BpeTokenCodec(String encodingName) {
    EncodingType type = EncodingType.fromName(encodingName.toLowerCase(Locale.ROOT)).orElseThrow(
        () -> new IllegalArgumentException("unknown tokenizer encoding \"" + encodingName
            + "\" (known: " + String.join(", ", dev.affinity.config.AffinitySettings.BPE_ENCODINGS) + ")"));
    this.encoding = REGISTRY.getEncoding(type);
    this.name = type.getName();
  }

  @Override
  public int[] encode(String text) {
    return encoding.encode(text).toArray();
  }

  @Override
  public String decode(int[] tokens) {
    IntArrayList list = new IntArrayList(tokens.length);
    for (int t : tokens) {
      if (t >= 0 && t < 100_000) {  // the simulator's ids can exceed the vocabulary
        list.add(t);
      }
    }
    try {
      return encoding.decode(list);
    } catch (IllegalArgumentException e) {
      return "";
    }
  }

  /**
   * The longest token of the encoding in UTF-8 bytes (each input character is at least one byte, and these
   * encodings have no normalizer): computed once, by decoding every id.
   */
  @Override
  public int maxCharsPerToken(java.util.List<String> texts) {
    int m = maxCharsPerToken;
    if (m == 0) {
      IntArrayList one = new IntArrayList(1);
      int misses = 0;
      for (int id = 0; misses < 4096; id++) {  // ids are dense; special tokens follow the last gap
        one.clear();
        one.add(id);
        try {
          m = Math.max(m, encoding.decodeBytes(one).length);
          misses = 0;
        } catch (RuntimeException e) {  // jtokkit: NullPointerException "Unknown token for decoding"
          misses++;
        }
      }
      maxCharsPerToken = m = Math.max(m, 1);
    }
    return m;
  }

  @Override
  public String name() {
    return name;
  }
}
