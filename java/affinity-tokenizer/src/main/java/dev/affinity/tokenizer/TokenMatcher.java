package dev.affinity.tokenizer;

import java.util.BitSet;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeSet;

/**
 * Finds added tokens in a text as Hugging Face's tokenizer does ({@code AddedVocabulary}'s Aho-Corasick automaton,
 * {@code MatchKind::LeftmostLongest}): at the leftmost position where any token starts, the longest token there.
 */
final class TokenMatcher {
  private final Map<String, Integer> ids;
  /** Distinct token lengths, longest first. */
  private final int[] lengths;
  private final BitSet firstChars = new BitSet();

  /** @param ids each token's text and id (empty texts are ignored) */
  TokenMatcher(Map<String, Integer> ids) {
    this.ids = new HashMap<>();
    TreeSet<Integer> distinct = new TreeSet<>((a, b) -> Integer.compare(b, a));
    ids.forEach((text, id) -> {
      if (!text.isEmpty()) {
        this.ids.put(text, id);
        distinct.add(text.length());
        firstChars.set(text.charAt(0));
      }
    });
    this.lengths = distinct.stream().mapToInt(Integer::intValue).toArray();
  }

  boolean isEmpty() {
    return ids.isEmpty();
  }

  /** The longest token's length in chars (0 when there is none). */
  int maxLength() {
    return lengths.length == 0 ? 0 : lengths[0];
  }

  /** The longest token starting at {@code i} in {@code text} and ending by {@code limit}, or null. */
  String at(String text, int i, int limit) {
    if (!firstChars.get(text.charAt(i))) {
      return null;
    }
    for (int len : lengths) {
      if (i + len <= limit) {
        String candidate = text.substring(i, i + len);
        if (ids.containsKey(candidate)) {
          return candidate;
        }
      }
    }
    return null;
  }

  /** The id of a token {@link #at} returned. */
  int id(String token) {
    return ids.get(token);
  }
}
