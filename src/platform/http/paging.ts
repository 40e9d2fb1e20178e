import { z } from "zod";

/** Offset paging of decisions §1: `page` 1..1,000,000, `pageSize` 1..200 (larger clamps). */
export const MAX_PAGE = 1_000_000;
export const MAX_PAGE_SIZE = 200;
export const DEFAULT_PAGE_SIZE = 50;

const intString = (name: string) => z.string().regex(/^\d+$/, { message: `${name} must be a positive integer` });

export const pagingQuery = z.object({
  page: intString("page")
    .transform(Number)
    .refine((n) => n >= 1 && n <= MAX_PAGE, { message: `page must be between 1 and ${MAX_PAGE}` })
    .optional(),
  pageSize: intString("pageSize")
    .transform(Number)
    .refine((n) => n >= 1, { message: "pageSize must be at least 1" })
    .transform((n) => Math.min(n, MAX_PAGE_SIZE))
    .optional(),
});

export interface Window {
  page: number;
  pageSize: number;
  offset: number;
}

/** Normalises parsed paging parameters into a window (pure). */
export function toWindow(q: { page?: number; pageSize?: number }): Window {
  const page = q.page ?? 1;
  const pageSize = q.pageSize ?? DEFAULT_PAGE_SIZE;
  return { page, pageSize, offset: (page - 1) * pageSize };
}

export interface Page<T> {
  items: T[];
  total: number;
  page: number;
  page_size: number;
  next_page: number | null;
  truncated: boolean;
}

/** Builds the paged answer; `next_page` is page+1 while more matches remain. */
export function toPage<T>(items: T[], total: number, w: Window, truncated = false): Page<T> {
  return {
    items,
    total,
    page: w.page,
    page_size: w.pageSize,
    next_page: w.page * w.pageSize < total ? w.page + 1 : null,
    truncated,
  };
}

/** Zod schema of a paged answer over `item`, for OpenAPI. */
export function pageSchema<T extends z.ZodType>(item: T) {
  return z.object({
    items: z.array(item),
    total: z.number().int(),
    page: z.number().int(),
    page_size: z.number().int(),
    next_page: z.number().int().nullable(),
    truncated: z.boolean(),
  });
}
