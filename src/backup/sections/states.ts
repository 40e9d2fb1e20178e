/**
 * The states sections (docs/backup.md): `state-templates` (the operator documents, D1) and
 * `states` (each state's declaration and template attachments, which live in the state's
 * StateStore object with a D1 listing mirror). Records are data, not configuration, and are not
 * exported.
 *
 * A state is imported through the same code as its doors: `declareState` (`PUT /api/states/{name}`:
 * schema rules, the object's additive-only rule once it has records, the D1 mirror) and
 * `attachTemplate` (`PUT /api/states/{name}/attachments/{template}`). Those are object calls, not
 * one D1 batch: the section applies state by state, in document order. Each step is idempotent
 * (declaring a state as it is declared, or re-attaching a template as attached, changes nothing
 * but `updated_at`), so an import that stopped at a state (a 409 from the object, an object that
 * could not be reached) has applied the rows before it, and running the same import again
 * converges.
 */
import { z } from "zod";
import { stateStoreStub } from "../../states/rpc";
import { JsonObject } from "../../platform/http/bounded-json";
import { all, d1 } from "../../platform/persistence/d1";
import { parseStored } from "../../platform/persistence/stored-json";
import { resolveTextAnywhere } from "../../storage/text-resources";
import { AttachBody, attachTemplate } from "../../states/attachments";
import { StateDeclarationBody, StateName, checkBaseSchema, looksLikeTemplatedText } from "../../states/declaration";
import { declareState, stateNames } from "../../states/declarations";
import { StateTemplateDocument, TemplateName, checkTemplatePrograms, insertTemplateStatement } from "../../states/templates";
import { deployedTemplates, deployedTextResources } from "../deployment";
import type { StateBackupRow, StateTemplateBackupRow } from "../rows";
import { defineSection, firstDuplicate, inRow, parseAtRow, refuseDuplicates, rowFault, runBatch } from "../section";

const TemplateRow = z.object({ name: z.string(), document: z.string(), created_at: z.string(), updated_at: z.string() });

export const stateTemplatesSection = defineSection({
  name: "state-templates",
  secret: false,
  description: "State templates (the documents states attach), as the template door takes them.",
  store: "states",
  async exportRows(ctx) {
    const results = await all(TemplateRow, d1(ctx.db)`SELECT name, document, created_at, updated_at FROM state_templates ORDER BY name`);
    return results.map((r): StateTemplateBackupRow => ({ ...r, document: parseStored(JsonObject, r.document, "state_templates row") }));
  },
  async validate(rows) {
    refuseDuplicates("state-templates", rows, (r) => r.name, "name");
    const plan: Array<{ row: StateTemplateBackupRow; document: StateTemplateDocument }> = [];
    for (const [i, row] of rows.entries()) {
      parseAtRow("state-templates", i, "name", TemplateName, row.name);
      const doc = parseAtRow("state-templates", i, "document", StateTemplateDocument, row.document);
      if (doc.name !== undefined && doc.name !== row.name) throw rowFault("state-templates", i, "document.name", "must equal the row's name");
      const problem = await checkTemplatePrograms(doc);
      if (problem) throw rowFault("state-templates", i, `document.${problem.split(":")[0]}`, problem.slice(problem.indexOf(":") + 1).trim());
      // Stored with its name set to the row's, by insertTemplateStatement.
      plan.push({ row, document: doc });
    }
    return plan;
  },
  async apply(plan, ctx) {
    await runBatch(
      ctx.db,
      plan.map(({ row, document }) => insertTemplateStatement(ctx.db, row.name, document, row.created_at, row.updated_at, "replace")),
    );
    return { applied: plan.length };
  },
});

interface StatePlanRow {
  index: number;
  name: string;
  body: StateDeclarationBody;
  attachments: Array<{ template: string; body: AttachBody }>;
}

export const statesSection = defineSection({
  name: "states",
  secret: false,
  description: "State declarations (description, schema, subject kinds, retention) with their template attachments; records are not exported.",
  store: "states",
  async exportRows(ctx) {
    const rows: StateBackupRow[] = [];
    for (const name of await stateNames(ctx.db)) {
      const stub = stateStoreStub(ctx.env, name);
      const [view, attachments] = await Promise.all([stub.view(), stub.storedAttachments()]);
      // The D1 listing can name a state its object no longer declares (a delete that stopped halfway).
      if (!view) continue;
      rows.push({
        name,
        description: view.description,
        schema: view.schema,
        subject_kinds: view.subject_kinds,
        default_subject_kind: view.default_subject_kind,
        retention_days: view.retention_days,
        attachments: (attachments ?? []).map((a) => ({
          template: a.template,
          path: a.path,
          parameters: a.parameters,
          declarations: a.declarations,
          options: a.options,
        })),
      });
    }
    return rows;
  },
  async validate(rows, ctx) {
    refuseDuplicates("states", rows, (r) => r.name, "name");
    const templates = new Set([...(await deployedTemplates(ctx)), ...(ctx.rows["state-templates"] ?? []).map((t) => t.name)]);
    const resources = new Set([...(await deployedTextResources(ctx)), ...(ctx.rows["text-resources"] ?? []).map((r) => r.id)]);
    const plan: StatePlanRow[] = [];
    for (const [i, row] of rows.entries()) {
      parseAtRow("states", i, "name", StateName, row.name);
      const { attachments, name: _name, ...declaration } = row;
      const body = parseAtRow("states", i, null, StateDeclarationBody, declaration);
      if (!looksLikeTemplatedText(body.schema)) {
        const problem = checkBaseSchema(body.schema);
        if (problem) throw rowFault("states", i, "schema", problem);
      } else {
        const id = (body.schema as { id?: string | null }).id;
        // A text resource may also live in the content store (R2), where the declaration door resolves it too.
        if (id && !resources.has(id) && !(await resolveTextAnywhere(ctx.env.DB, id)))
          throw rowFault("states", i, "schema.id", "names a text resource that is neither in the deployment nor in this import");
      }
      const again = firstDuplicate(attachments, (a) => a.template);
      if (again >= 0) throw rowFault("states", i, `attachments.${again}.template`, "repeats the template of an earlier attachment");
      const attach: StatePlanRow["attachments"] = [];
      for (const [j, a] of attachments.entries()) {
        if (!templates.has(a.template))
          throw rowFault("states", i, `attachments.${j}.template`, "names a state template that is neither in the deployment nor in this import");
        const { template, ...attachBody } = a;
        attach.push({ template, body: parseAtRow("states", i, `attachments.${j}`, AttachBody, attachBody) });
      }
      plan.push({ index: i, name: row.name, body, attachments: attach });
    }
    return plan;
  },
  async apply(plan, ctx) {
    for (const s of plan) {
      await inRow("states", s.index, async () => {
        await declareState(ctx.env, s.name, s.body, ctx.nowMs);
        for (const a of s.attachments) await attachTemplate(ctx.env, s.name, a.template, a.body, ctx.nowMs);
      });
    }
    return { applied: plan.length };
  },
});
