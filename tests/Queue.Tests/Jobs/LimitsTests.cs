using System.Net;
using System.Net.Http.Headers;
using System.Text;
using Queue.Core.Security;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Jobs;

/// <summary>The Api with small size limits, so that 413s are cheap to provoke.</summary>
public sealed class SmallLimitsFixture : ApiFixture
{
    protected override IDictionary<string, string?> Settings => new Dictionary<string, string?>
    {
        ["Limits:MaxDocumentBytes"] = "1024",
        ["Limits:MaxRequestBytes"] = "4096",
    };
}

public sealed class LimitsTests(SmallLimitsFixture fx) : IClassFixture<SmallLimitsFixture>
{
    [Fact]
    public async Task An_inline_document_over_the_limit_gets_413_and_nothing_is_stored()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var r = await fx.Api.ClientWithKey(key).PostAsync(U("/jobs"),
            Json($$"""{"name":"big-inline","documents":[{"name":"a","content":"{{Convert.ToBase64String(new byte[1025])}}"}]}"""));
        await AssertProblemAsync(r, HttpStatusCode.RequestEntityTooLarge);
        Assert.Equal(0, await fx.CountAsync("SELECT COUNT(*) FROM jobs WHERE name = 'big-inline'"));
    }

    [Fact]
    public async Task A_request_body_over_the_limit_gets_413()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var r = await fx.Api.ClientWithKey(key).PostAsync(U("/jobs"), Json($$"""{"name":"{{new string('x', 5000)}}"}"""));
        await AssertProblemAsync(r, HttpStatusCode.RequestEntityTooLarge);
    }

    [Fact]
    public async Task A_raw_document_over_the_limit_gets_413_and_nothing_is_stored()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var job = await http.OpenJobAsync();
        await AssertProblemAsync(await http.UploadRawAsync(job, new byte[1025]), HttpStatusCode.RequestEntityTooLarge);
        Assert.Equal(HttpStatusCode.Created, (await http.UploadRawAsync(job, new byte[1024])).StatusCode);
        Assert.Equal(1, await fx.CountAsync("SELECT COUNT(*) FROM documents WHERE job_id = @job", new { job }));
    }

    [Fact]
    public async Task A_chunked_body_without_a_length_is_stopped_at_the_request_limit()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var job = await http.OpenJobAsync();
        var content = new StreamContent(new MemoryStream(Encoding.UTF8.GetBytes($$"""{"name":"{{new string('x', 5000)}}"}""")));
        content.Headers.ContentType = new MediaTypeHeaderValue("application/json");
        var request = new HttpRequestMessage(HttpMethod.Post, U("/jobs")) { Content = content };
        request.Headers.TransferEncodingChunked = true;
        await AssertProblemAsync(await http.SendAsync(request), HttpStatusCode.RequestEntityTooLarge);
        Assert.Equal(0, await fx.CountAsync("SELECT COUNT(*) FROM documents WHERE job_id = @job", new { job }));
    }

    [Fact]
    public async Task A_multipart_upload_with_one_document_over_the_limit_stores_none_of_its_documents()
    {
        var (_, key) = await fx.NewCustomerAsync();
        var http = fx.Api.ClientWithKey(key);
        var job = await http.OpenJobAsync();
        using var form = new MultipartFormDataContent
        {
            { new ByteArrayContent(new byte[10]), "file", "small.bin" },
            { new ByteArrayContent(new byte[2000]), "file", "big.bin" },
        };
        await AssertProblemAsync(await http.PostAsync(U($"/jobs/{job}/documents"), form), HttpStatusCode.RequestEntityTooLarge);
        Assert.Equal(0, await fx.CountAsync("SELECT COUNT(*) FROM documents WHERE job_id = @job", new { job }));
        Assert.Equal(0, await fx.CountAsync("SELECT COUNT(*) FROM items WHERE job_id = @job", new { job }));
        Assert.Equal(0, await fx.CountAsync("SELECT documents FROM jobs WHERE id = @job", new { job }));
    }
}

public sealed class RateLimitTests(ApiFixture fx) : IClassFixture<ApiFixture>
{
    [Fact]
    public async Task A_tenant_over_its_rate_limit_gets_429_with_retry_after_and_other_tenants_are_not_affected()
    {
        var (_, slow) = await fx.NewCustomerAsync(settings: new TenantSettings(["text"], RateLimit: 1, RateBurst: 2));
        var (_, other) = await fx.NewCustomerAsync(settings: new TenantSettings(["text"], RateLimit: 1, RateBurst: 2));
        var http = fx.Api.ClientWithKey(slow);
        var statuses = new List<HttpResponseMessage>();
        for (var i = 0; i < 5; i++)
        {
            statuses.Add(await http.GetAsync(U("/jobs")));
        }
        var rejected = statuses.First(r => r.StatusCode == HttpStatusCode.TooManyRequests);
        await AssertProblemAsync(rejected, HttpStatusCode.TooManyRequests);
        Assert.True(rejected.Headers.RetryAfter?.Delta >= TimeSpan.FromSeconds(1));
        Assert.Equal(HttpStatusCode.OK, statuses[0].StatusCode);
        Assert.Equal(HttpStatusCode.OK, (await fx.Api.ClientWithKey(other).GetAsync(U("/jobs"))).StatusCode);
    }

    [Fact]
    public async Task A_rate_limit_of_0_means_no_limit()
    {
        var (_, key) = await fx.NewCustomerAsync(settings: new TenantSettings(["text"], RateLimit: 0, RateBurst: 0));
        var http = fx.Api.ClientWithKey(key);
        for (var i = 0; i < 30; i++)
        {
            Assert.Equal(HttpStatusCode.OK, (await http.GetAsync(U("/jobs"))).StatusCode);
        }
    }
}
