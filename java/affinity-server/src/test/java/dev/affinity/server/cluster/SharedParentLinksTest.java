package dev.affinity.server.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.affinity.conversation.AffinityRoots;
import dev.affinity.conversation.Resolution;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Sub-agent parent links shared by frontends through a real etcd: a link one frontend learns resolves nested
 * sub-agents on another, a frontend started later loads every link, and an unlinked child is forgotten by all.
 * Writes run on the caller's thread here, so etcd holds a link when {@code link} returns.
 */
class SharedParentLinksTest {
  EtcdProcess etcd;
  final AtomicLong now = new AtomicLong(0);
  final List<AutoCloseable> open = new ArrayList<>();

  @BeforeEach
  void start() throws Exception {
    etcd = EtcdProcess.start();
  }

  @AfterEach
  void stop() throws Exception {
    for (int i = open.size() - 1; i >= 0; i--) {
      open.get(i).close();
    }
    etcd.close();
  }

  SharedParentLinks frontend() {
    EtcdClusterStorage storage = new EtcdClusterStorage(List.of(etcd.endpoint()));
    open.add(storage);
    SharedParentLinks links = new SharedParentLinks(storage, "links-test", 1000, 3600, now::get, Runnable::run).start();
    open.add(links);
    return links;
  }

  @Test
  void aLinkLearnedByOneFrontendResolvesGrandchildrenOnAnother() throws Exception {
    SharedParentLinks a = frontend();
    SharedParentLinks b = frontend();
    a.link("child", "root");
    PinSharingRouterTest.await("b hears of the link", () -> "root".equals(b.parentOf("child")));
    Resolution grandchild = new AffinityRoots(b, 16).rooted(new Resolution("grandchild", "child", false));
    assertEquals("root", grandchild.affinityId());
    PinSharingRouterTest.await("a hears of b's link", () -> "child".equals(a.parentOf("grandchild")));

    SharedParentLinks late = frontend();
    PinSharingRouterTest.await("a frontend started later loads every link", () -> late.size() == 2);
    assertEquals("root", new AffinityRoots(late, 16).rooted(new Resolution("g2", "grandchild", false)).affinityId());
  }

  @Test
  void anUnlinkedChildIsForgottenByEveryFrontend() throws Exception {
    SharedParentLinks a = frontend();
    SharedParentLinks b = frontend();
    a.link("child", "root");
    PinSharingRouterTest.await("b hears of the link", () -> "root".equals(b.parentOf("child")));
    b.unlink("child");
    assertNull(b.parentOf("child"));
    PinSharingRouterTest.await("a forgets the link", () -> a.parentOf("child") == null);
    EtcdClusterStorage probe = new EtcdClusterStorage(List.of(etcd.endpoint()));
    open.add(probe);
    assertEquals(Map.of(), probe.getPrefix(a.prefix()));
  }

  @Test
  void anUnchangedLinkIsRewrittenOnlyAfterHalfTheTtl() throws Exception {
    SharedParentLinks a = frontend();
    EtcdClusterStorage probe = new EtcdClusterStorage(List.of(etcd.endpoint()));
    open.add(probe);
    a.link("child", "root");
    long first = probe.versioned(a.prefix() + "child").orElseThrow().modRevision();
    a.link("child", "root");
    assertEquals(first, probe.versioned(a.prefix() + "child").orElseThrow().modRevision(), "not written again");
    now.addAndGet(1800L * 1_000_000_000L);
    a.link("child", "root");
    long refreshed = probe.versioned(a.prefix() + "child").orElseThrow().modRevision();
    assertEquals(true, refreshed > first, "refreshed for the other frontends' copies");
    a.link("child", "other-root");
    assertEquals("other-root", probe.get(a.prefix() + "child").orElseThrow(), "a changed parent is written at once");
  }
}
