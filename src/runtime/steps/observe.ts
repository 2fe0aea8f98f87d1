/**
 * Step 13, observe: the `onDispatch` observers (reputation, telemetry, spans, request logs) see the
 * outcome settled by the step that answered, or by the error exit. Runs after every answer
 * (`always`); an observer cannot change the outcome (Runtime.observe catches its throws).
 * Spec: spec/shapes.md §reputation §telemetry.
 */
import { outcomeOf, type Call, type Step } from './call.ts';

export const observe: Step<Call> = {
  name: 'observe',
  always: true,
  run(c) {
    c.rt.observe(outcomeOf(c));
    return undefined;
  },
};
