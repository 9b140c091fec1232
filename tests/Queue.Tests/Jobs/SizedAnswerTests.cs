using System.Net;
using System.Net.Http.Headers;
using System.Net.Http.Json;
using Queue.Tests.Infrastructure;
using static Queue.Tests.Jobs.JobsTestKit;

namespace Queue.Tests.Jobs;

/// <summary>
/// The hot routes answer with a Content-Length, in one write, not chunked (docs/DESIGN.md "Peer speed": the terminating
/// chunk was a second send per answer). Over real Kestrel, where chunking happens.
/// </summary>
public sealed class SizedAnswerTests(KestrelApiFixture fx) : IClassFixture<KestrelApiFixture>
{
    [Fact]
    public async Task Creating_a_job_uploading_and_claiming_answer_with_a_content_length_and_no_chunks()
    {
        var (_, key) = await fx.NewCustomerAsync();
        using var customer = Client(key);
        using var created = await customer.PostAsJsonAsync(U("/jobs"), new { name = "sized", tasks = new[] { "text" }, open = true,
            documents = new[] { new { name = "a.txt", content = B64("a") } } });
        AssertSized(created, HttpStatusCode.Created);
        var job = (await created.BodyAsync()).GetProperty("id").GetInt64();
        Assert.Equal($"/jobs/{job}", created.Headers.Location?.OriginalString);

        using var upload = await customer.PostAsync(U($"/jobs/{job}/documents?name=b.txt"), new StringContent("b", System.Text.Encoding.UTF8, "text/plain"));
        AssertSized(upload, HttpStatusCode.Created);

        using var worker = Client(await fx.NewWorkerKeyAsync());
        using var next = await worker.PostAsJsonAsync(U("/next"), new { worker = "w", tasks = new[] { "text" }, max = 2 });
        AssertSized(next, HttpStatusCode.OK);
        Assert.Equal(2, (await next.BodyAsync()).GetProperty("items").GetArrayLength());
    }

    private static void AssertSized(HttpResponseMessage r, HttpStatusCode expected)
    {
        Assert.Equal(expected, r.StatusCode);
        Assert.NotEqual(true, r.Headers.TransferEncodingChunked);
        Assert.True(r.Content.Headers.ContentLength > 0, "no Content-Length");
        Assert.Equal("application/json", r.Content.Headers.ContentType?.MediaType);
    }

    private HttpClient Client(string key)
    {
        var http = new HttpClient { BaseAddress = new Uri($"http://127.0.0.1:{fx.Port}") };
        http.DefaultRequestHeaders.Authorization = new AuthenticationHeaderValue("Bearer", key);
        return http;
    }
}
