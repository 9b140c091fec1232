using Queue.Core.Jobs;

namespace Queue.Api.Jobs;

/// <summary>The request body, stopped with 413 past the request limit, whatever the server in front enforces.</summary>
internal static class RequestLimit
{
    public static Stream Body(HttpContext http, long maxBytes)
    {
        if (http.Request.ContentLength > maxBytes)
        {
            throw new PayloadTooLargeException($"the request body is over the limit of {maxBytes} bytes");
        }
        return new MeteredStream(http.Request.Body, maxBytes, "the request body");
    }
}
