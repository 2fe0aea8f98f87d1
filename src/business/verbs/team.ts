/**
 * Team verbs (category `team`): list employees (with each technician's booked hours this week),
 * change an employee's role or active flag (admin floor; reversible; previewable). The company
 * always keeps an active owner (last_owner).
 *
 * Note: an employee's `role` here is the business record of the job's rights; API keys carry
 * their own role (the runtime's principal), managed with `solid keys`.
 * Reasons: not_found ("employee 7 not found"), no_change, last_owner, invalid_input.
 * Spec: spec/shapes.md §aggregate §preview §receipt, spec/consent.md §role-floors.
 */
import type { Queryable } from '../../store/store.ts';
import { DomainError } from '../data/domain-error.ts';
import { num } from '../data/row-values.ts';
import { listEmployees, requireEmployee, setEmployeeActive, setEmployeeRole } from '../data/team.ts';
import { EMPLOYEE_ROLES, EMPLOYEE_TITLES, type EmployeeRole, type EmployeeTitle } from '../schema.ts';
import { valueWords } from './change-words.ts';
import { defineBusinessVerb } from './business-verb.ts';
import { employeeView } from './entity-views.ts';
import { enumProp, idProp, objectSchema } from './input-schema.ts';

export const teamListEmployees = defineBusinessVerb<{
  role?: EmployeeRole;
  title?: EmployeeTitle;
  active?: boolean;
}>({
  name: 'team.list_employees',
  title: 'List employees',
  description:
    "The company's employees (user id, name, email, role, job title, active flag), optionally filtered by role, title (technician, dispatcher, office, manager, owner) or active, with each one's scheduled visits in the next 7 days. Technicians' user ids are what scheduling verbs take.",
  shape: 'aggregate',
  category: 'team',
  input: objectSchema({
    role: enumProp(EMPLOYEE_ROLES, 'Only this role.'),
    title: enumProp(EMPLOYEE_TITLES, 'Only this job title.'),
    active: { type: 'boolean', description: 'Only active (true) or inactive (false) employees.' },
  }),
  idempotent: true,
  webmcp_surfaces: ['dashboard'],
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const employees = await listEmployees(ctx.db, c, args);
    const week = await ctx.db.all<{ technician_user_id: unknown; n: unknown }>(
      `SELECT technician_user_id, COUNT(*) AS n FROM appointments WHERE company_id = ? AND status = 'scheduled' AND starts_at >= ? AND starts_at < ? GROUP BY technician_user_id`,
      [c, ctx.now.toISOString(), new Date(ctx.now.getTime() + 7 * 86_400_000).toISOString()],
    );
    const booked = new Map(week.map((r) => [num(r.technician_user_id), num(r.n)]));
    return {
      entity_id: 'employees',
      entity_type: 'collection',
      data: {
        items: employees.map((e) => ({ ...employeeView(e), visits_next_7_days: booked.get(e.user_id) ?? 0 })),
        total: employees.length,
      },
      fetched_at: ctx.now.toISOString(),
    };
  },
});

async function activeOwners(q: Queryable, c: number): Promise<number> {
  return (await listEmployees(q, c, { role: 'owner', active: true })).length;
}

interface RoleArgs {
  employee_user_id: number;
  role: EmployeeRole;
}

const roleInput = objectSchema(
  {
    employee_user_id: idProp('The employee (their user id, from team.list_employees).'),
    role: enumProp(EMPLOYEE_ROLES, 'The new role: read_only, employee, admin or owner.'),
  },
  ['employee_user_id', 'role'],
);

export const teamSetRole = defineBusinessVerb<RoleArgs>({
  name: 'team.set_role',
  title: "Change an employee's role",
  description:
    "Change an employee's role (read_only, employee, admin, owner). Needs an admin. The only active owner cannot be demoted (last_owner). Reversible with audit.revert. Preview with team.preview_set_role.",
  shape: 'receipt',
  category: 'team',
  consent: 'WRITE_REVERSIBLE',
  role_floor: 'admin',
  preview: 'team.preview_set_role',
  input: roleInput,
  summary: (a) => `Make employee ${a.employee_user_id} ${a.role}.`,
  async handler(ctx, args) {
    const { previous_role, employee } = await setEmployeeRole(
      ctx.db,
      ctx.principal.company_id,
      args.employee_user_id,
      args.role,
      ctx.now,
    );
    ctx.setEntity('employee', employee.user_id);
    ctx.emit({
      type: 'employee.role_changed',
      entity_type: 'employee',
      entity_id: employee.user_id,
      payload: { previous_role, role: employee.role },
    });
    ctx.setRollback(`employee:${employee.user_id}:role:${previous_role}`, {
      user_id: employee.user_id,
      previous_role,
    });
    return { status: 'updated', user_id: employee.user_id, previous_role, role: employee.role };
  },
  revert: {
    describe: ({ rollback, args }) =>
      `Role of user #${String(rollback.user_id)}: ${valueWords('role', rollback.previous_role)} → ${valueWords('role', args.role)}`,
    async handler(ctx, original) {
      const r = original.rollback as { user_id: number; previous_role: EmployeeRole };
      const { previous_role, employee } = await setEmployeeRole(
        ctx.db,
        ctx.principal.company_id,
        r.user_id,
        r.previous_role,
        ctx.now,
      );
      ctx.emit({
        type: 'employee.role_changed',
        entity_type: 'employee',
        entity_id: employee.user_id,
        payload: { previous_role, role: employee.role, revert_of: original.audit_id },
      });
      return { revert_action: `set employee ${employee.user_id} back to ${employee.role}` };
    },
  },
});

export const teamPreviewSetRole = defineBusinessVerb<RoleArgs>({
  name: 'team.preview_set_role',
  title: 'Preview a role change',
  description:
    'Show an employee before and after team.set_role with the same arguments, without writing; refuses as the change would (no_change, last_owner).',
  shape: 'preview',
  category: 'team',
  input: roleInput,
  role_floor: 'admin',
  idempotent: true,
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const e = await requireEmployee(ctx.db, c, args.employee_user_id);
    if (e.role === args.role)
      throw new DomainError('no_change', `employee ${e.user_id} already has role ${args.role}`);
    if (e.role === 'owner' && e.active && (await activeOwners(ctx.db, c)) <= 1)
      throw new DomainError(
        'last_owner',
        `employee ${e.user_id} is the only active owner`,
        'Promote another employee to owner first.',
      );
    return {
      current: { user_id: e.user_id, name: e.name, role: e.role },
      projected: { user_id: e.user_id, name: e.name, role: args.role },
      delta: { role: `${e.role} → ${args.role}` },
      reversible: teamSetRole.revert !== undefined,
      notes: 'This is the employee record; API keys keep their own role until reissued.',
    };
  },
});

interface ActiveArgs {
  employee_user_id: number;
  active: boolean;
}

const activeInput = objectSchema(
  {
    employee_user_id: idProp('The employee (their user id, from team.list_employees).'),
    active: { type: 'boolean', description: 'false deactivates (no new bookings), true reactivates.' },
  },
  ['employee_user_id', 'active'],
);

export const teamSetActive = defineBusinessVerb<ActiveArgs>({
  name: 'team.set_active',
  title: 'Activate or deactivate an employee',
  description:
    'Deactivate an employee (no new visits can be booked on them; existing ones stay) or reactivate one. Needs an admin. The only active owner cannot be deactivated (last_owner). Reversible with audit.revert. Preview with team.preview_set_active.',
  shape: 'receipt',
  category: 'team',
  consent: 'WRITE_REVERSIBLE',
  role_floor: 'admin',
  preview: 'team.preview_set_active',
  input: activeInput,
  summary: (a) => `${a.active ? 'Reactivate' : 'Deactivate'} employee ${a.employee_user_id}.`,
  async handler(ctx, args) {
    const { previous_active, employee } = await setEmployeeActive(
      ctx.db,
      ctx.principal.company_id,
      args.employee_user_id,
      args.active,
      ctx.now,
    );
    ctx.setEntity('employee', employee.user_id);
    ctx.emit({
      type: 'employee.status_changed',
      entity_type: 'employee',
      entity_id: employee.user_id,
      payload: { previous_active, active: employee.active },
    });
    ctx.setRollback(`employee:${employee.user_id}:active:${previous_active}`, {
      user_id: employee.user_id,
      previous_active,
    });
    return { status: 'updated', user_id: employee.user_id, previous_active, active: employee.active };
  },
  revert: {
    describe: ({ rollback, args }) =>
      `User #${String(rollback.user_id)}: ${rollback.previous_active === true ? 'active' : 'inactive'} → ${args.active === true ? 'active' : 'inactive'}`,
    async handler(ctx, original) {
      const r = original.rollback as { user_id: number; previous_active: boolean };
      const { employee } = await setEmployeeActive(
        ctx.db,
        ctx.principal.company_id,
        r.user_id,
        r.previous_active,
        ctx.now,
      );
      ctx.emit({
        type: 'employee.status_changed',
        entity_type: 'employee',
        entity_id: employee.user_id,
        payload: {
          previous_active: !r.previous_active,
          active: employee.active,
          revert_of: original.audit_id,
        },
      });
      return {
        revert_action: `${employee.active ? 'reactivated' : 'deactivated'} employee ${employee.user_id}`,
      };
    },
  },
});

export const teamPreviewSetActive = defineBusinessVerb<ActiveArgs>({
  name: 'team.preview_set_active',
  title: 'Preview (de)activating an employee',
  description:
    'Show an employee before and after team.set_active with the same arguments and their upcoming visits, without writing.',
  shape: 'preview',
  category: 'team',
  input: activeInput,
  role_floor: 'admin',
  idempotent: true,
  async handler(ctx, args) {
    const c = ctx.principal.company_id;
    const e = await requireEmployee(ctx.db, c, args.employee_user_id);
    if (e.active === args.active)
      throw new DomainError(
        'no_change',
        `employee ${e.user_id} is already ${args.active ? 'active' : 'inactive'}`,
      );
    if (!args.active && e.role === 'owner' && (await activeOwners(ctx.db, c)) <= 1)
      throw new DomainError(
        'last_owner',
        `employee ${e.user_id} is the only active owner`,
        'Promote another employee to owner first.',
      );
    const upcoming = await ctx.db.get<{ n: unknown }>(
      `SELECT COUNT(*) AS n FROM appointments WHERE company_id = ? AND technician_user_id = ? AND status = 'scheduled' AND starts_at >= ?`,
      [c, e.user_id, ctx.now.toISOString()],
    );
    return {
      current: { user_id: e.user_id, name: e.name, active: e.active },
      projected: { user_id: e.user_id, name: e.name, active: args.active },
      delta: { active: `${e.active} → ${args.active}` },
      reversible: teamSetActive.revert !== undefined,
      upcoming_visits: num(upcoming?.n),
      notes:
        !args.active && num(upcoming?.n) > 0
          ? `${num(upcoming?.n)} scheduled visits stay on this technician; reschedule them (scheduling.reschedule_appointment).`
          : 'No scheduled visit is affected.',
    };
  },
});

export const teamVerbs = [
  teamListEmployees,
  teamSetRole,
  teamPreviewSetRole,
  teamSetActive,
  teamPreviewSetActive,
];
