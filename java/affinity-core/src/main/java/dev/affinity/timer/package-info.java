/**
 * Timers as a dependency: {@link dev.affinity.timer.Scheduler} runs a task after a delay, on the wall clock
 * ({@link dev.affinity.timer.RealScheduler}) in the server and in virtual time in the fleet simulator, so
 * that the same orchestration code runs in both.
 */
package dev.affinity.timer;
