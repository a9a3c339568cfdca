/**
 * Admission: a parsed client request becomes an {@link dev.affinity.frontend.AdmittedRequest} (the public
 * API's rules checked, the model accepted, the conversation resolved, the prompt tokenized) or a
 * {@link dev.affinity.admission.RequestRejectedException} with the 4xx to answer, once, before orchestration.
 */
package dev.affinity.admission;
