/**
 * ReadView: a Queryable that runs each statement against committed data (one `store.read` per
 * statement), for handler contexts outside any transaction. It cannot write.
 */
import type { Queryable, Store } from './store.ts';

export class ReadView implements Queryable {
  constructor(private readonly store: Store) {}
  get<T>(sql: string, params?: readonly unknown[]) {
    return this.store.read((q) => q.get<T>(sql, params));
  }
  all<T>(sql: string, params?: readonly unknown[]) {
    return this.store.read((q) => q.all<T>(sql, params));
  }
  run(): Promise<never> {
    return Promise.reject(new Error('the read view cannot write'));
  }
}
