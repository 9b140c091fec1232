using System.Net;
using System.Net.Http.Headers;
using System.Text;
using System.Text.Json;
using CsCheck;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Reliability;

/// <summary>
/// Required reliability test 15, over HTTP: every string and number field of every route, filled with SQL
/// metacharacters, huge strings, odd Unicode, out-of-range numbers, broken JSON, broken base64 and broken multipart.
/// No answer is a 5xx, and the service is healthy afterwards.
/// </summary>
[TakesAbout(40)]
public sealed class HttpFuzzTests(ApiFixture fx) : IClassFixture<ApiFixture>
{
    private const int Iterations = 400;

    private static readonly Gen<string> Text = Gen.OneOf<string>(
        Gen.String[Gen.Char["abcdefghijklmnopqrstuvwxyz0123456789-"], 0, 40],
        Gen.String[Gen.Char["'\";--/*%_\\<>&{}[]=+ \t"], 0, 30],
        Gen.String[Gen.Char['\u0001', '\ud7ff'], 0, 40],
        Gen.OneOf("", "\u200b", "😀", "\ud800", "' OR 1=1 --", "Robert'); DROP TABLE jobs;--", "%00", "../../etc/passwd", "null", "-1", "1e309"),
        Gen.Int[0, 300_000].Select(n => new string('x', n)));

    /// <summary>A JSON value of any type, numbers out of every range included.</summary>
    private static readonly Gen<string> JsonValue = Gen.OneOf<string>(
        Text.Select(t => JsonSerializer.Serialize(t)),
        Gen.Long.Select(n => n.ToString(System.Globalization.CultureInfo.InvariantCulture)),
        Gen.OneOf("1e400", "-0", "3.5", "true", "false", "null", "[]", "{}", "[\"text\",\"text\"]", "[1,2]", "\"5\"", "9999999999999999999999"));

    private static readonly Gen<string> BrokenJson = Gen.OneOf<string>(
        Text, Gen.OneOf("{", "{\"name\":", "[", "{\"name\":\"a\",}", "{'name':'a'}", "\u0000", "{\"name\":\"a\"}{\"name\":\"b\"}"));

    private static readonly string[] JobFields = ["name", "tasks", "open", "documents", "priority", "tenant", "state", "NAME"];

    private static readonly string[] NextFields = ["worker", "tasks", "max", "wait", "lease", "MAX"];

    [Fact]
    public async Task No_generated_request_to_any_route_gets_a_5xx_and_the_service_stays_healthy()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var customer = fx.Api.ClientWithKey(key);
        var worker = fx.Api.ClientWithKey(await fx.NewWorkerKeyAsync());
        var open = await customer.OpenJobAsync(["text"]);
        var failures = new List<string>();

        async Task Send(HttpClient http, HttpRequestMessage request)
        {
            var what = $"{request.Method} {request.RequestUri}";
            using var r = await http.SendAsync(request);
            if ((int)r.StatusCode >= 500)
            {
                failures.Add($"{(int)r.StatusCode} {what}: {await r.Content.ReadAsStringAsync()}");
            }
        }

        // POST /jobs: objects whose fields hold values of any type, documents with broken base64, and broken JSON.
        await Gen.Select(JsonValue, JsonValue, JsonValue, Text, Gen.Int[0, JobFields.Length - 1], Gen.Bool).SampleAsync(async (a, b, c, content, field, broken) =>
        {
            var json = broken ? a : $"{{\"{JobFields[field]}\":{b},\"documents\":[{{\"name\":{c},\"content\":{JsonSerializer.Serialize(content)}}}]}}";
            await Send(customer, new HttpRequestMessage(HttpMethod.Post, U("/jobs")) { Content = new StringContent(json, Encoding.UTF8, "application/json") });
        }, iter: Iterations, threads: 1);
        await BrokenJson.SampleAsync(body => Send(customer, new HttpRequestMessage(HttpMethod.Post, U("/jobs")) { Content = new StringContent(body, Encoding.UTF8, "application/json") }),
            iter: Iterations, threads: 1);

        // Uploads: raw bodies with hostile names and types, and multipart with broken boundaries and parts.
        await Gen.Select(Text, Text, Text).SampleAsync(async (name, type, body) =>
        {
            var raw = new HttpRequestMessage(HttpMethod.Post, U($"/jobs/{open}/documents?name={Uri.EscapeDataString(name)}")) { Content = new StringContent(body) };
            raw.Content.Headers.TryAddWithoutValidation("Content-Type", type);
            await Send(customer, raw);
            var multipart = new HttpRequestMessage(HttpMethod.Post, U($"/jobs/{open}/documents")) { Content = new StringContent(body) };
            multipart.Content.Headers.TryAddWithoutValidation("Content-Type", $"multipart/form-data; boundary={type}");
            await Send(customer, multipart);
        }, iter: Iterations, threads: 1);

        // Query strings of the list routes, ids of any size, and Idempotency-Keys.
        await Gen.Select(Text, Text, Text, Gen.Long).SampleAsync(async (state, limit, after, id) =>
        {
            var q = $"state={Uri.EscapeDataString(state)}&limit={Uri.EscapeDataString(limit)}&after={Uri.EscapeDataString(after)}";
            await Send(customer, new HttpRequestMessage(HttpMethod.Get, U($"/jobs?{q}")));
            await Send(customer, new HttpRequestMessage(HttpMethod.Get, U($"/jobs/{open}/items?{q}")));
            await Send(customer, new HttpRequestMessage(HttpMethod.Get, U($"/jobs/{open}/documents?{q}")));
            await Send(customer, new HttpRequestMessage(HttpMethod.Get, U($"/jobs/{id}")));
            await Send(customer, new HttpRequestMessage(HttpMethod.Get, U($"/jobs/{id}/explain")));
            var keyed = new HttpRequestMessage(HttpMethod.Post, U("/jobs")) { Content = new StringContent("{\"name\":\"k\"}", Encoding.UTF8, "application/json") };
            keyed.Headers.TryAddWithoutValidation("Idempotency-Key", state);
            await Send(customer, keyed);
        }, iter: Iterations, threads: 1);

        // Worker routes: /next bodies, and complete, fail and extend with any token, error and lease.
        await Gen.Select(JsonValue, Gen.Int[0, NextFields.Length - 1], Text, JsonValue, Gen.Long).SampleAsync(async (value, field, token, number, id) =>
        {
            await Send(worker, new HttpRequestMessage(HttpMethod.Post, U("/next")) { Content = new StringContent($"{{\"{NextFields[field]}\":{value}}}", Encoding.UTF8, "application/json") });
            var t = JsonSerializer.Serialize(token);
            await Send(worker, new HttpRequestMessage(HttpMethod.Post, U($"/items/{id}/complete")) { Content = new StringContent($"{{\"leaseToken\":{t}}}", Encoding.UTF8, "application/json") });
            await Send(worker, new HttpRequestMessage(HttpMethod.Post, U($"/items/{id}/fail")) { Content = new StringContent($"{{\"leaseToken\":{t},\"error\":{value},\"retry\":{number}}}", Encoding.UTF8, "application/json") });
            await Send(worker, new HttpRequestMessage(HttpMethod.Post, U($"/items/{id}/extend")) { Content = new StringContent($"{{\"leaseToken\":{t},\"lease\":{number}}}", Encoding.UTF8, "application/json") });
            var doc = new HttpRequestMessage(HttpMethod.Get, U($"/items/{id}/document"));
            doc.Headers.TryAddWithoutValidation("Lease-Token", token);
            await Send(worker, doc);
        }, iter: Iterations, threads: 1);

        Assert.True(failures.Count == 0, string.Join("\n", failures.Take(10)));
        Assert.Equal(HttpStatusCode.OK, (await fx.Api.ClientWithKey(null).GetAsync(U("/healthz"))).StatusCode);
        var after = await customer.CreateJobAsync(new { name = "after-the-fuzz", tasks = new[] { "text" }, documents = new[] { new { name = "a.txt", content = B64("ok") } } });
        Assert.Equal("closed", after.GetProperty("state").GetString());
    }
}
