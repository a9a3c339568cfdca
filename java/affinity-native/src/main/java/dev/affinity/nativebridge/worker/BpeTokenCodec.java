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

  @Override
  public String name() {
    return name;
  }
}
