/**
 * Session lifecycle: sessions (conversation ids) the frontend has seen, ended by the client
 * ({@code X-Dynamo-Session-Final: true}) or expired when idle, and what ending one releases (its pins and its
 * parent link).
 */
package dev.affinity.session;
