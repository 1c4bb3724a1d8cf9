// /metrics is valid Prometheus text (checked by lib/prometheus.mjs, which is itself tested here
// on texts a scraper rejects), carries the engine and HTTP families, and its counters move as
// requests are served: prompt and generated tokens, requests, steps, histograms, responses by
// status code. Also /slots and /props describe the engine the way the other tests rely on.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { MODELS, modelPath } from './lib/paths.mjs';
import { startServer } from './lib/server.mjs';
import { parsePrometheusText, sampleValue } from './lib/prometheus.mjs';

const stories = modelPath(MODELS.stories);

describe('the Prometheus text checker', () => {
  const good = [
    '# HELP a_total Things.\n# TYPE a_total counter\na_total 3\n',
    '# TYPE h histogram\nh_bucket{le="0.1"} 1\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 3\nh_sum 2.5\nh_count 3\n',
    'x{a="b\\"c\\\\d\\ne"} NaN 1700000000000\n',
    '# a comment\ny -Inf\nz 1e-3\n',
    '# TYPE s summary\ns{quantile="0.5"} 1\ns_sum 3\ns_count 2\n',
  ];
  const bad = [
    ['no final newline', 'a 1'],
    ['bad name', '1abc 1\n'],
    ['bad value', 'a one\n'],
    ['unquoted label', 'a{b=c} 1\n'],
    ['bad escape', 'a{b="\\t"} 1\n'],
    ['TYPE after samples', 'a 1\n# TYPE a gauge\n'],
    ['two TYPE lines', '# TYPE a gauge\n# TYPE a gauge\na 1\n'],
    ['unknown type', '# TYPE a meter\na 1\n'],
    ['split groups', 'a 1\nb 1\na{x="1"} 2\n'],
    ['duplicate series', 'a{x="1"} 1\na{x="1"} 2\n'],
    ['negative counter', '# TYPE c counter\nc -1\n'],
    ['histogram without +Inf', '# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1\n'],
    ['histogram not cumulative', '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n'],
    ['+Inf bucket != count', '# TYPE h histogram\nh_bucket{le="+Inf"} 2\nh_sum 1\nh_count 3\n'],
    ['histogram without count', '# TYPE h histogram\nh_bucket{le="+Inf"} 2\nh_sum 1\n'],
    ['summary without quantile', '# TYPE s summary\ns 1\n'],
    ['bad timestamp', 'a 1 soon\n'],
    ['carriage return', 'a 1\r\n'],
    ['too many fields', 'a 1 2 3\n'],
  ];
  for (const text of good) {
    it(`accepts ${JSON.stringify(text.slice(0, 40))}`, () => {
      parsePrometheusText(text);
    });
  }
  for (const [what, text] of bad) {
    it(`rejects: ${what}`, () => {
      assert.throws(() => parsePrometheusText(text));
    });
  }
});

describe('/metrics, /slots and /props', { skip: !stories && 'stories model missing' }, () => {
  let server;
  before(async () => {
    server = await startServer({ model: stories, args: ['--parallel', '3'] });
  });
  after(async () => {
    await server?.stop();
  });

  it('parses as Prometheus text and counts what was served', async () => {
    const before = parsePrometheusText(await server.metricsText());
    for (const [name, type] of [
      ['hearth_prompt_tokens_total', 'counter'],
      ['hearth_generated_tokens_total', 'counter'],
      ['hearth_requests_total', 'counter'],
      ['hearth_engine_steps_total', 'counter'],
      ['hearth_requests_processing', 'gauge'],
      ['hearth_requests_waiting', 'gauge'],
      ['hearth_time_to_first_token_seconds', 'histogram'],
      ['hearth_inter_token_latency_seconds', 'histogram'],
      ['hearth_http_responses_total', 'counter'],
    ]) {
      assert.ok(before.has(name), `${name} missing`);
      assert.equal(before.get(name).type, type, name);
      assert.ok(before.get(name).help, `${name} has no HELP`);
    }
    const v = (fams, name, labels) => sampleValue(fams, name, labels) ?? 0;

    const r = await server.postJson('/v1/completions', { prompt: 'Once upon a time', max_tokens: 10, temperature: 0, ignore_eos: true });
    const bad = await server.request('POST', '/v1/completions', { prompt: 'x', temperature: 'hot' });
    assert.equal(bad.status, 400);

    const after = parsePrometheusText(await server.metricsText());
    assert.equal(v(after, 'hearth_generated_tokens_total') - v(before, 'hearth_generated_tokens_total'), 10);
    assert.equal(v(after, 'hearth_requests_total') - v(before, 'hearth_requests_total'), 1);
    const promptDelta =
      v(after, 'hearth_prompt_tokens_total') - v(before, 'hearth_prompt_tokens_total') +
      v(after, 'hearth_prompt_tokens_cached_total') - v(before, 'hearth_prompt_tokens_cached_total');
    assert.ok(promptDelta >= 1 && promptDelta <= r.usage.prompt_tokens, `prompt tokens moved by ${promptDelta}`);
    assert.ok(v(after, 'hearth_engine_steps_total') - v(before, 'hearth_engine_steps_total') >= 10);
    assert.equal(v(after, 'hearth_time_to_first_token_seconds_count') - v(before, 'hearth_time_to_first_token_seconds_count'), 1);
    assert.equal(v(after, 'hearth_inter_token_latency_seconds_count') - v(before, 'hearth_inter_token_latency_seconds_count'), 9);
    assert.ok(v(after, 'hearth_time_to_first_token_seconds_sum') > v(before, 'hearth_time_to_first_token_seconds_sum'));
    assert.ok(v(after, 'hearth_http_responses_total', { code: '200' }) - v(before, 'hearth_http_responses_total', { code: '200' }) >= 1);
    assert.equal(v(after, 'hearth_http_responses_total', { code: '400' }) - v(before, 'hearth_http_responses_total', { code: '400' }), 1);
    assert.equal(v(after, 'hearth_requests_processing'), 0);
    assert.equal(v(after, 'hearth_requests_waiting'), 0);
  });

  it('/slots and /props describe the engine', async () => {
    const props = await server.getJson('/props');
    assert.equal(props.total_slots, 3);
    assert.ok(props.default_generation_settings.n_ctx > 0);
    const slots = await server.getJson('/slots');
    assert.equal(slots.length, 3);
    slots.forEach((s, i) => {
      assert.equal(s.id, i);
      assert.equal(s.is_processing, false);
      assert.equal(s.n_ctx, props.default_generation_settings.n_ctx);
    });
    // A finished request leaves its tokens cached in a slot (the prefix cache).
    assert.ok(slots.some((s) => s.n_cached > 0), JSON.stringify(slots));
  });
});
