package dev.affinity.server.fleet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.affinity.timer.RealScheduler;
import io.netty.channel.EventLoop;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The orchestration's timers: on the scheduling event loop, else on the fallback's thread; both cancellable. */
class LoopSchedulerTest {
  private MultiThreadIoEventLoopGroup group;
  private RealScheduler fallback;
  private LoopScheduler scheduler;

  @BeforeEach
  void setUp() {
    group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    fallback = new RealScheduler("loop-scheduler-test");
    scheduler = new LoopScheduler(fallback);
  }

  @AfterEach
  void tearDown() {
    fallback.close();
    group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
  }

  @Test
  void aTaskScheduledOnAnEventLoopRunsOnThatLoop() throws Exception {
    EventLoop loop = group.next();
    CompletableFuture<Boolean> ranOnLoop = new CompletableFuture<>();
    loop.execute(() -> scheduler.schedule(() -> ranOnLoop.complete(loop.inEventLoop()), Duration.ofMillis(5)));
    assertTrue(ranOnLoop.get(5, TimeUnit.SECONDS));
  }

  @Test
  void aTaskScheduledElsewhereRunsOnTheFallback() throws Exception {
    CompletableFuture<String> thread = new CompletableFuture<>();
    scheduler.schedule(() -> thread.complete(Thread.currentThread().getName()), Duration.ofMillis(5));
    assertEquals("loop-scheduler-test", thread.get(5, TimeUnit.SECONDS));
  }

  @Test
  void cancelledTasksDoNotRun() throws Exception {
    AtomicBoolean ran = new AtomicBoolean();
    EventLoop loop = group.next();
    CompletableFuture<Runnable> onLoop = new CompletableFuture<>();
    loop.execute(() -> onLoop.complete(scheduler.schedule(() -> ran.set(true), Duration.ofMillis(50))));
    onLoop.get(5, TimeUnit.SECONDS).run(); // cancelled from another thread than the loop
    Runnable elsewhere = scheduler.schedule(() -> ran.set(true), Duration.ofMillis(50));
    elsewhere.run();
    elsewhere.run(); // idempotent
    CountDownLatch later = new CountDownLatch(1);
    loop.schedule(later::countDown, 200, TimeUnit.MILLISECONDS);
    assertTrue(later.await(5, TimeUnit.SECONDS));
    Thread.sleep(100);
    assertFalse(ran.get());
  }
}
