using System.Net;
using System.Net.Http.Headers;
using System.Text;
using System.Text.Json;
using Queue.Tests.Infrastructure;
using Queue.Tests.Jobs;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Reliability;

/// <summary>Found as a new user would: every error is a 4xx with a detail, never a 500.</summary>
public sealed class ContractErrorTests(ApiFixture fx) : IClassFixture<ApiFixture>
{
    /// <summary>docs/CONTRACT.md "Conventions": a field error still carries detail, one sentence naming the first bad field.</summary>
    private static async Task AssertFieldErrorAsync(HttpResponseMessage r, string field)
    {
        await AssertProblemAsync(r, HttpStatusCode.BadRequest, field);
        var body = JsonDocument.Parse(await r.Content.ReadAsStringAsync()).RootElement;
        Assert.True(body.TryGetProperty("detail", out var detail) && detail.GetString() is { Length: > 0 } d && d.Contains(field, StringComparison.Ordinal),
            $"detail should name '{field}': {body}");
    }

    private static HttpRequestMessage Post(string path, HttpContent content)
    {
        var m = new HttpRequestMessage(HttpMethod.Post, U(path)) { Content = content };
        return m;
    }

    [Fact]
    public async Task A_multipart_body_that_is_garbage_for_its_boundary_gets_400_with_detail()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var job = await http.OpenJobAsync(["text"]);
        var content = new ByteArrayContent("garbage"u8.ToArray());
        content.Headers.ContentType = MediaTypeHeaderValue.Parse("multipart/form-data; boundary=zzz");
        var r = await http.PostAsync(U($"/jobs/{job}/documents"), content);
        await AssertFieldErrorAsync(r, "body");
        Assert.Equal(0, await fx.CountAsync("SELECT COUNT(*) FROM documents WHERE job_id = @job", new { job }));
    }

    [Fact]
    public async Task A_multipart_part_cut_off_before_its_closing_boundary_gets_400_and_stores_nothing()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var job = await http.OpenJobAsync(["text"]);
        var content = new ByteArrayContent(Encoding.ASCII.GetBytes(
            "--zzz\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\nhello, and then nothing"));
        content.Headers.ContentType = MediaTypeHeaderValue.Parse("multipart/form-data; boundary=zzz");
        await AssertFieldErrorAsync(await http.PostAsync(U($"/jobs/{job}/documents"), content), "body");
        Assert.Equal(0, await fx.CountAsync("SELECT COUNT(*) FROM documents WHERE job_id = @job", new { job }));
    }

    [Fact]
    public async Task A_job_without_a_name_gets_400_whose_detail_names_the_field()
    {
        var (_, key) = await fx.NewCustomerAsync();
        await AssertFieldErrorAsync(await fx.Api.ClientWithKey(key).PostAsync(U("/jobs"), Json("""{"open":true}""")), "name");
    }

    [Fact]
    public async Task A_256_character_idempotency_key_gets_400_whose_detail_names_the_header()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var m = Post("/jobs", Json("""{"name":"x"}"""));
        m.Headers.TryAddWithoutValidation("Idempotency-Key", new string('k', 256));
        await AssertFieldErrorAsync(await fx.Api.ClientWithKey(key).SendAsync(m), "Idempotency-Key");
    }

    [Fact]
    public async Task An_unknown_field_in_a_complete_body_gets_400_whose_detail_names_it()
    {
        var worker = fx.Api.ClientWithKey(await fx.NewWorkerKeyAsync());
        var r = await worker.PostAsync(U("/items/1/complete"), Json($$"""{"leaseToken":"{{new string('0', 32)}}","bogus":1}"""));
        await AssertFieldErrorAsync(r, "bogus");
    }

    [Fact]
    public async Task A_4001_character_error_in_a_fail_body_gets_400_whose_detail_names_the_field()
    {
        var worker = fx.Api.ClientWithKey(await fx.NewWorkerKeyAsync());
        var r = await worker.PostAsync(U("/items/1/fail"), Json($$"""{"leaseToken":"{{new string('0', 32)}}","error":"{{new string('e', 4001)}}"}"""));
        await AssertFieldErrorAsync(r, "error");
    }

    [Fact]
    public async Task A_tampered_cursor_with_ticks_out_of_range_gets_400_not_500()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var cursor = Convert.ToBase64String(Encoding.ASCII.GetBytes($"{long.MaxValue}.1")).TrimEnd('=').Replace('+', '-').Replace('/', '_');
        await AssertFieldErrorAsync(await fx.Api.ClientWithKey(key).GetAsync(U($"/jobs?after={cursor}")), "after");
    }

    [Theory]
    [InlineData("""{"max":"5"}""", "max")]
    [InlineData("""{"MAX":5}""", "MAX")]
    [InlineData("""{"wait":"0"}""", "wait")]
    public async Task A_next_body_with_a_quoted_number_or_a_miscased_name_gets_400(string body, string field)
    {
        var worker = fx.Api.ClientWithKey(await fx.NewWorkerKeyAsync());
        await AssertFieldErrorAsync(await worker.PostAsync(U("/next"), Json(body)), field);
    }

    [Fact]
    public async Task A_job_body_with_a_miscased_name_gets_400()
    {
        var (_, key) = await fx.NewCustomerAsync();
        await AssertFieldErrorAsync(await fx.Api.ClientWithKey(key).PostAsync(U("/jobs"), Json("""{"Name":"x"}""")), "Name");
    }
}
