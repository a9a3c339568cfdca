/**
 * The text-to-ids codec a tokenizer setting names ({@code affinity.tokenizer}, {@code affinity worker --tokenizer}),
 * opened once by a frontend ({@code fleet}) or a worker process ({@code workermode}).
 */
package dev.affinity.server.codec;
