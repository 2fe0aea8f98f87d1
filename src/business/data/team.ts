/**
 * Employees of the company: tenant-scoped reads and the role / active-flag writes.
 *
 * `user_id` is the runtime principal's user id (unique per company); `role` is the principal's
 * role floor (owner > admin > employee > read_only) and `title` is the job (technician,
 * dispatcher, office, manager, owner). Technicians are the employees appointments are booked on.
 */
import type { Queryable } from '../../store/store.ts';
import { EMPLOYEE_ROLES, type EmployeeRole, type EmployeeTitle } from '../schema.ts';
import { DomainError, invalidInput, notFound } from './domain-error.ts';
import { isoTime } from './iso-time.ts';
import { flag, num, textOrNull } from './row-values.ts';

export interface Employee {
  id: number;
  company_id: number;
  user_id: number;
  name: string;
  email: string;
  phone: string | null;
  role: EmployeeRole;
  title: EmployeeTitle;
  active: boolean;
  hired_at: string;
  updated_at: string;
}

const EMPLOYEE_COLUMNS =
  'id, company_id, user_id, name, email, phone, role, title, active, hired_at, updated_at';

function toEmployee(row: Record<string, unknown>): Employee {
  return {
    id: num(row.id),
    company_id: num(row.company_id),
    user_id: num(row.user_id),
    name: String(row.name),
    email: String(row.email),
    phone: textOrNull(row.phone),
    role: row.role as EmployeeRole,
    title: row.title as EmployeeTitle,
    active: flag(row.active),
    hired_at: String(row.hired_at),
    updated_at: String(row.updated_at),
  };
}

/** The employee with this user id in the company, or undefined. */
export async function getEmployee(
  q: Queryable,
  companyId: number,
  userId: number,
): Promise<Employee | undefined> {
  const row = await q.get(`SELECT ${EMPLOYEE_COLUMNS} FROM employees WHERE company_id = ? AND user_id = ?`, [
    companyId,
    userId,
  ]);
  return row === undefined ? undefined : toEmployee(row);
}

/** The employee or DomainError `not_found` ("employee 7 not found"). */
export async function requireEmployee(q: Queryable, companyId: number, userId: number): Promise<Employee> {
  const employee = await getEmployee(q, companyId, userId);
  if (employee === undefined) throw notFound('employee', userId);
  return employee;
}

export interface EmployeeFilter {
  role?: EmployeeRole;
  title?: EmployeeTitle;
  active?: boolean;
}

/** The company's employees ordered by user id, optionally filtered. */
export async function listEmployees(
  q: Queryable,
  companyId: number,
  filter: EmployeeFilter = {},
): Promise<Employee[]> {
  const where = ['company_id = ?'];
  const params: unknown[] = [companyId];
  if (filter.role !== undefined) {
    where.push('role = ?');
    params.push(filter.role);
  }
  if (filter.title !== undefined) {
    where.push('title = ?');
    params.push(filter.title);
  }
  if (filter.active !== undefined) {
    where.push('active = ?');
    params.push(filter.active ? 1 : 0);
  }
  const rows = await q.all(
    `SELECT ${EMPLOYEE_COLUMNS} FROM employees WHERE ${where.join(' AND ')} ORDER BY user_id`,
    params,
  );
  return rows.map(toEmployee);
}

/** Active technicians of the company, by user id. */
export function listTechnicians(q: Queryable, companyId: number): Promise<Employee[]> {
  return listEmployees(q, companyId, { title: 'technician', active: true });
}

async function activeOwners(q: Queryable, companyId: number): Promise<number> {
  const row = await q.get<{ n: unknown }>(
    `SELECT COUNT(*) AS n FROM employees WHERE company_id = ? AND role = 'owner' AND active = 1`,
    [companyId],
  );
  return num(row?.n);
}

/**
 * Change an employee's role; returns the previous role. Throws `not_found`, `invalid_input`
 * (unknown role), `no_change`, `last_owner` (demoting the only active owner).
 */
export async function setEmployeeRole(
  tx: Queryable,
  companyId: number,
  userId: number,
  role: EmployeeRole,
  now: Date,
): Promise<{ previous_role: EmployeeRole; employee: Employee }> {
  if (!(EMPLOYEE_ROLES as readonly unknown[]).includes(role))
    throw invalidInput('role', `must be one of ${EMPLOYEE_ROLES.join(', ')}`);
  const employee = await requireEmployee(tx, companyId, userId);
  if (employee.role === role)
    throw new DomainError('no_change', `employee ${userId} already has role ${role}`);
  if (employee.role === 'owner' && employee.active && (await activeOwners(tx, companyId)) <= 1) {
    throw new DomainError(
      'last_owner',
      `employee ${userId} is the only active owner`,
      'Promote another employee to owner first.',
    );
  }
  const row = await tx.get(
    `UPDATE employees SET role = ?, updated_at = ? WHERE company_id = ? AND user_id = ? RETURNING ${EMPLOYEE_COLUMNS}`,
    [role, isoTime(now), companyId, userId],
  );
  return { previous_role: employee.role, employee: toEmployee(row!) };
}

/**
 * Activate or deactivate an employee; returns the previous flag. Throws `not_found`,
 * `no_change`, `last_owner` (deactivating the only active owner).
 */
export async function setEmployeeActive(
  tx: Queryable,
  companyId: number,
  userId: number,
  active: boolean,
  now: Date,
): Promise<{ previous_active: boolean; employee: Employee }> {
  const employee = await requireEmployee(tx, companyId, userId);
  if (employee.active === active)
    throw new DomainError('no_change', `employee ${userId} is already ${active ? 'active' : 'inactive'}`);
  if (!active && employee.role === 'owner' && (await activeOwners(tx, companyId)) <= 1) {
    throw new DomainError(
      'last_owner',
      `employee ${userId} is the only active owner`,
      'Promote another employee to owner first.',
    );
  }
  const row = await tx.get(
    `UPDATE employees SET active = ?, updated_at = ? WHERE company_id = ? AND user_id = ? RETURNING ${EMPLOYEE_COLUMNS}`,
    [active ? 1 : 0, isoTime(now), companyId, userId],
  );
  return { previous_active: employee.active, employee: toEmployee(row!) };
}
