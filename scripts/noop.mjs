// placeholder build until the client library lands
