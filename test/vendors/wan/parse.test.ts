import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/core/errors.js';
import type { JsonObject } from '../../../src/core/json.js';
import type { TaskRef, VendorStatus } from '../../../src/video/types.js';
import { redactorFor } from '../../../src/core/redact.js';
import { input, res, task, up, vendor } from '../../kit/wan.js';

describe('wan parseCreate, buildPoll, buildContent', () => {
  it('reads output.task_id and keeps the requested seconds for later', () => {
    const out = vendor.parseCreate(
      res(200, { request_id: 'r1', output: { task_id: 'abc-1', task_status: 'PENDING' } }),
      input('wan2.6-t2v', { seconds: 10 }),
      up,
    );
    // The rest of the answer is the job's first vendor_data, without the task id and status it maps.
    expect(out).toEqual({ taskId: 'abc-1', meta: { seconds: 10 }, vendorData: { request_id: 'r1', output: {} } });
    expect(() => vendor.parseCreate(res(200, { request_id: 'r1' }), input('wan2.6-t2v'), up)).toThrow(GatewayError);
  });

  it('polls /api/v1/tasks/{id} with the key, and downloads without it', () => {
    const poll = vendor.buildPoll({ ...task, taskId: 'a/b' }, up);
    expect(poll).toEqual({ method: 'GET', url: 'https://dashscope-intl.aliyuncs.com/api/v1/tasks/a%2Fb', headers: { authorization: 'Bearer sk-live-0123456789abcdef' } });
    const content = vendor.buildContent(task, { url: 'https://oss.example/v.mp4?Signature=s' }, up);
    expect(content).toEqual({ method: 'GET', url: 'https://oss.example/v.mp4?Signature=s', headers: {} });
  });
});

function poll(payload: JsonObject, t: TaskRef = task): VendorStatus {
  const st = vendor.parsePoll(res(200, payload), t, up);
  if ('next' in st) throw new Error('wan never asks for a follow-up request');
  return st;
}

describe('wan parsePoll', () => {
  const base = { task_id: task.taskId, submit_time: '2025-07-27 21:05:15.212' };

  it('PENDING and RUNNING are processing, as is a status DashScope adds later', () => {
    for (const s of ['PENDING', 'RUNNING', 'SUSPENDED']) {
      const st = poll({ request_id: 'r', output: { ...base, task_status: s } });
      expect(st.state).toBe('processing');
      expect(st.vendorData).toEqual({ request_id: 'r', output: { submit_time: base.submit_time } });
    }
  });

  it('SUCCEEDED: seconds from usage.duration, the URL as output, every other field in vendor_data', () => {
    const payload = {
      request_id: 'r2',
      output: { ...base, task_status: 'SUCCEEDED', end_time: '2025-07-27 21:07:00.000', video_url: 'https://oss/v.mp4?Signature=x', orig_prompt: 'p', actual_prompt: 'p+', future_field: [1, 2] },
      usage: { duration: 10, video_count: 1, SR: 720 },
      new_top_level: { a: 'b' },
    };
    const st = poll(payload);
    expect(st).toEqual({
      state: 'completed',
      seconds: 10,
      outputs: [{ url: 'https://oss/v.mp4?Signature=x', mimeType: 'video/mp4' }],
      vendorData: {
        request_id: 'r2',
        output: { submit_time: base.submit_time, end_time: '2025-07-27 21:07:00.000', orig_prompt: 'p', actual_prompt: 'p+', future_field: [1, 2] },
        usage: { duration: 10, video_count: 1, SR: 720 },
        new_top_level: { a: 'b' },
      },
    });
  });

  it('reads the older usage.video_duration and prefers output-only seconds for reference models', () => {
    const done = { ...base, task_status: 'SUCCEEDED', video_url: 'https://oss/v.mp4' };
    const older = poll({ output: done, usage: { video_duration: 5, video_ratio: '832*480', video_count: 1 } });
    expect(older.state === 'completed' && older.seconds).toBe(5);
    const r2v = poll({ output: done, usage: { duration: 13, input_video_duration: 3, output_video_duration: 10 } });
    expect(r2v.state === 'completed' && r2v.seconds).toBe(10);
    const derived = poll({ output: done, usage: { duration: 13, input_video_duration: 3 } });
    expect(derived.state === 'completed' && derived.seconds).toBe(10);
    const none = poll({ output: done }, { ...task, meta: { seconds: 7 } });
    expect(none.state === 'completed' && none.seconds).toBe(7);
  });

  it('maps every failure code to a stable code and keeps the vendor code in vendor_data', () => {
    const cases: [string, string][] = [
      ['DataInspectionFailed', 'content_policy_violation'],
      ['data_inspection_failed', 'content_policy_violation'],
      ['IPInfringementSuspect', 'content_policy_violation'],
      ['InvalidParameter.DataInspection', 'invalid_media'],
      ['InvalidURL', 'invalid_media'],
      ['InvalidParameter', 'unsupported_parameters'],
      ['InternalError.Algo', 'generation_failed'],
      ['InternalError', 'generation_failed'],
    ];
    for (const [code, expected] of cases) {
      const st = poll({ request_id: 'r', output: { ...base, task_status: 'FAILED', code, message: `msg for ${code}` } });
      expect(st).toEqual({
        state: 'failed',
        code: expected,
        message: `msg for ${code}`,
        vendorData: { request_id: 'r', output: { submit_time: base.submit_time, code, message: `msg for ${code}` } },
      });
    }
  });

  it('CANCELED is cancelled and UNKNOWN (forgotten after 24 h) is expired', () => {
    expect(poll({ output: { ...base, task_status: 'CANCELED' } })).toMatchObject({ state: 'failed', code: 'cancelled' });
    expect(poll({ output: { task_id: 'x', task_status: 'UNKNOWN' } })).toMatchObject({ state: 'failed', code: 'expired' });
  });
});

describe('wan classifyError', () => {
  const body = (code: string, message = 'm') => ({ request_id: 'r', code, message });

  it('separates client mistakes, moderation, our credentials and retryable trouble', () => {
    expect(vendor.classifyError(res(400, body('InvalidParameter', 'The size is invalid')))).toEqual({
      kind: 'client',
      status: 400,
      message: 'The size is invalid',
      code: 'InvalidParameter',
    });
    expect(vendor.classifyError(res(400, body('DataInspectionFailed', 'Input data may contain inappropriate content.')))).toEqual({
      kind: 'moderation',
      message: 'Input data may contain inappropriate content.',
      code: 'DataInspectionFailed',
    });
    expect(vendor.classifyError(res(401, body('InvalidApiKey')))).toMatchObject({ kind: 'auth', status: 401 });
    expect(vendor.classifyError(res(403, body('AccessDenied.Unpurchased')))).toMatchObject({ kind: 'auth', status: 403 });
    expect(vendor.classifyError(res(400, body('Arrearage')))).toMatchObject({ kind: 'auth' });
    expect(vendor.classifyError(res(413, body('BadRequest.TooLarge')))).toMatchObject({ kind: 'client', status: 413 });
    expect(vendor.classifyError(res(404, body('ModelNotFound')))).toMatchObject({ kind: 'client', status: 404 });
    expect(vendor.classifyError(res(429, body('Throttling.RateQuota'), { 'retry-after': '7' }))).toEqual({
      kind: 'retryable',
      status: 429,
      message: 'm',
      retryAfterSeconds: 7,
    });
    expect(vendor.classifyError(res(500, body('InternalError')))).toMatchObject({ kind: 'retryable', status: 500 });
    expect(vendor.classifyError({ status: 502, headers: {}, json: undefined, text: '<html>bad gateway</html>' })).toMatchObject({
      kind: 'retryable',
      message: '<html>bad gateway</html>',
    });
  });

  it('never echoes keys found in a vendor message', () => {
    const v = vendor.classifyError(res(400, body('InvalidParameter', 'bad key sk-live-0123456789abcdef in header Bearer sk-abcdefgh')));
    // Kept as the vendor wrote it: the core's redactor hides credentials before a client or a log sees it.
    const shown = redactorFor(up).text(v.message);
    expect(shown).not.toContain('0123456789abcdef');
    expect(shown).not.toContain('abcdefgh');
  });
});
