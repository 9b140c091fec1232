using System.Net;
using System.Net.Http.Headers;
using System.Text;
using Queue.Core.Security;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Jobs;

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
