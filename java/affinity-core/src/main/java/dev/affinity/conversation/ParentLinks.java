package dev.affinity.conversation;

/**
 * What the frontend remembers of sub-agents: each sub-agent's parent, learned from the requests it has
 * seen (a request with an own id and a parent header links the one to the other). Ids are as resolution
 * hands them out, so under tenant isolation they are already scoped to their tenant. Implementations are
 * bounded and forget a link some time after it was last written: {@link LocalParentLinks} (one frontend),
 * and the server's etcd-shared store (several frontends). Thread-safe.
 */
public interface ParentLinks {
  /** The parent {@code child} was last seen with, or null. */
  String parentOf(String child);

  /** Records (or refreshes) {@code child}'s parent. */
  void link(String child, String parent);

  /** Forgets {@code child}'s link (the session ended or expired); false when there was none. */
  boolean unlink(String child);

  /** Links known now (tests, metrics). */
  int size();
}
