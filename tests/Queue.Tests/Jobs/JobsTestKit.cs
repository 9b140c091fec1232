using System.Net;
using System.Net.Http.Headers;
using System.Net.Http.Json;
using System.Text;
using System.Text.Json;
using Dapper;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Jobs;

/// <summary>Small helpers shared by the job tests: requests, and direct looks at the database.</summary>
internal static class JobsTestKit
{
    public static Uri U(string path) => new(path, UriKind.Relative);

    public static string B64(string text) => Convert.ToBase64String(Encoding.UTF8.GetBytes(text));

    public static StringContent Json(string json) => new(json, Encoding.UTF8, "application/json");

    public static async Task<JsonElement> BodyAsync(this HttpResponseMessage r) => await r.Content.ReadFromJsonAsync<JsonElement>();

    public static async Task<JsonElement> CreateJobAsync(this HttpClient http, object body, HttpStatusCode expected = HttpStatusCode.Created)
    {
        var r = await http.PostAsJsonAsync(U("/jobs"), body);
        Assert.True(expected == r.StatusCode, $"expected {expected}, got {(int)r.StatusCode}: {await r.Content.ReadAsStringAsync()}");
        return await r.BodyAsync();
    }

    public static async Task<long> OpenJobAsync(this HttpClient http, string[]? tasks = null) =>
        (await http.CreateJobAsync(tasks is null ? new { name = "open-job", open = true } : new { name = "open-job", open = true, tasks }))
            .GetProperty("id").GetInt64();

    public static async Task<HttpResponseMessage> UploadRawAsync(this HttpClient http, long jobId, byte[] bytes, string name = "a.txt", string type = "text/plain")
    {
        var content = new ByteArrayContent(bytes);
        content.Headers.ContentType = MediaTypeHeaderValue.Parse(type);
        return await http.PostAsync(U($"/jobs/{jobId}/documents?name={Uri.EscapeDataString(name)}"), content);
    }

    public static async Task AssertProblemAsync(HttpResponseMessage r, HttpStatusCode expected, params string[] errorFields)
    {
        var text = await r.Content.ReadAsStringAsync();
        Assert.True(expected == r.StatusCode, $"expected {(int)expected}, got {(int)r.StatusCode}: {text}");
        Assert.Equal("application/problem+json", r.Content.Headers.ContentType?.MediaType);
        var body = JsonDocument.Parse(text).RootElement;
        Assert.Equal((int)expected, body.GetProperty("status").GetInt32());
        Assert.False(string.IsNullOrEmpty(body.GetProperty("title").GetString()));
        foreach (var field in errorFields)
        {
            Assert.True(body.TryGetProperty("errors", out var errors) && errors.TryGetProperty(field, out _), $"errors should name '{field}': {text}");
        }
    }

    public static async Task<long> CountAsync(this DatabaseFixture fx, string sql, object? args = null)
    {
        await using var conn = await fx.DataSource.OpenConnectionAsync();
        return await conn.ExecuteScalarAsync<long>(sql, args);
    }
}
